"""Cases for the optional inputs of FlashAttention-3's ops (gradc.ops.flash_attention_v3): seqused_q / seqused_k
shortening a varlen sequence, and block_mask dropping flashmask_attention_v2's 128 x 128 tiles; each out from the
attention written here with numpy."""

import numpy as np

from . import SlotCase

R = np.random.default_rng(67)
Q, K, V = R.standard_normal((5, 2, 4)), R.standard_normal((5, 1, 4)), R.standard_normal((5, 1, 4))
CU = np.array([0, 5], np.int32)


def attention(q, k, v, scale):
    """softmax(q k^T scale) v of q [s, h, d], k and v [s, 1, d] (one kv head), every key."""
    scores = np.einsum("qhd,kd->hqk", q, k[:, 0]) * scale
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return np.einsum("hqk,kd->qhd", p / p.sum(-1, keepdims=True), v[:, 0])


VARLEN = {"q": Q, "k": K, "v": V, "cu_seqlens_q": CU, "cu_seqlens_k": CU}
ATTRS = {"max_seqlen_q": 5, "max_seqlen_k": 5, "softmax_scale": 0.5}
SHORT_Q = np.zeros((5, 2, 4))
SHORT_Q[:3] = attention(Q[:3], K, V, 0.5)
CASES = [
    SlotCase("flash_attn_v3_varlen", "seqused_q", {**VARLEN, "seqused_q": np.array([3], np.int32)},
             {"out": SHORT_Q}, ATTRS),
    SlotCase("flash_attn_v3_varlen", "seqused_k", {**VARLEN, "seqused_k": np.array([2], np.int32)},
             {"out": attention(Q, K[:2], V[:2], 0.5)}, ATTRS),
]

# flashmask_attention_v2, not causal, bounds [LTS, UTE] = [3, 0] mask no row; a 0 tile masks every key: rows are 0
BOUNDS = np.tile(np.array([3, 0], np.int32), (1, 1, 3, 1))
Q4, K4, V4 = (R.standard_normal((1, 3, 2, 4)) for _ in range(3))
CASES += [
    SlotCase("flashmask_attention_v2", "block_mask",
             {"q": Q4, "k": K4, "v": V4, "startend_row_indices": BOUNDS,
              "block_mask": np.zeros((1, 1, 1, 1), np.int32)},
             {"out": np.zeros((1, 3, 2, 4))}, {"softmax_scale": 0.5}),
]
