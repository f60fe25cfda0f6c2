"""Cases for the optional inputs of FlashAttention's ops (gradc.ops.flash_attention, flash_attention_varlen): attn_mask
(and memory_efficient_attention's bias) added to the scaled scores, and fixed_seed_offset copied to seed_offset; each
out from the attention written here with numpy."""

import numpy as np

from . import SlotCase

R = np.random.default_rng(59)
Q, K, V = R.standard_normal((1, 3, 2, 4)), R.standard_normal((1, 4, 1, 4)), R.standard_normal((1, 4, 1, 4))
MASK = R.standard_normal((1, 2, 3, 4))
SEED = np.array([7, 64], np.int64)


def attention(q, k, v, scale, mask=0.0):
    """softmax(q k^T scale + mask) v per head of q [b, s, h, d], k and v spread to the query heads."""
    k, v = (np.repeat(x, q.shape[2] // x.shape[2], axis=2) for x in (k, v))
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) * scale + mask
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return np.einsum("bhqk,bkhd->bqhd", p / p.sum(-1, keepdims=True), v)


UNPADDED = {"q": Q[0], "k": K[0], "v": V[0], "cu_seqlens_q": np.array([0, 3], np.int32),
            "cu_seqlens_k": np.array([0, 4], np.int32)}
LONGEST = {"max_seqlen_q": 3, "max_seqlen_k": 4, "scale": 0.25}
QKV = R.standard_normal((1, 3, 3, 2, 4))   # 1 query head per kv head: q, k, v along axis 2
PACKED = {"q": QKV[:, :, 0], "k": QKV[:, :, 1], "v": QKV[:, :, 2]}
BOUNDS = np.full((1, 1, 4, 1), 3, np.int32)   # causal, and no column masks a row before 3
CASES = [
    SlotCase("flash_attn", "attn_mask", {"q": Q, "k": K, "v": V, "attn_mask": MASK},
             {"out": attention(Q, K, V, 0.5, MASK)}),
    SlotCase("flash_attn", "fixed_seed_offset", {"q": Q, "k": K, "v": V, "fixed_seed_offset": SEED},
             {"out": attention(Q, K, V, 0.5), "seed_offset": SEED}),
    SlotCase("flash_attn_unpadded", "attn_mask", {**UNPADDED, "attn_mask": MASK},
             {"out": attention(Q, K, V, 0.25, MASK)[0]}, LONGEST),
    SlotCase("flash_attn_unpadded", "fixed_seed_offset", {**UNPADDED, "fixed_seed_offset": SEED},
             {"out": attention(Q, K, V, 0.25)[0], "seed_offset": SEED}, LONGEST),
    SlotCase("flash_attn_qkvpacked", "attn_mask", {"qkv": QKV, "attn_mask": MASK[..., :3]},
             {"out": attention(*PACKED.values(), 0.5, MASK[..., :3])}),
    SlotCase("flash_attn_qkvpacked", "fixed_seed_offset", {"qkv": QKV, "fixed_seed_offset": SEED},
             {"out": attention(*PACKED.values(), 0.5), "seed_offset": SEED}),
    SlotCase("flashmask_attention", "fixed_seed_offset", {"q": Q, "k": K, "v": V, "startend_row_indices": BOUNDS,
                                                          "fixed_seed_offset": SEED},
             {"out": attention(Q, K, V, 0.5, np.where(np.tril(np.ones((3, 4), bool)), 0, -np.inf)),
              "seed_offset": SEED}, {"causal": True}),
]

VARLEN = {"qkv": QKV[0], "cu_seqlens_q": np.array([0, 3], np.int32), "cu_seqlens_k": np.array([0, 3], np.int32)}
VARLEN_ATTRS = {"max_seqlen_q": 3, "max_seqlen_k": 3, "scale": 0.25}
KEY, VALUE = np.repeat(K, 2, axis=2), np.repeat(V, 2, axis=2)   # memory_efficient_attention: one head count
CASES += [
    SlotCase("flash_attn_varlen_qkvpacked", "attn_mask", {**VARLEN, "attn_mask": MASK[..., :3]},
             {"out": attention(*PACKED.values(), 0.25, MASK[..., :3])[0]}, VARLEN_ATTRS),
    SlotCase("flash_attn_varlen_qkvpacked", "fixed_seed_offset", {**VARLEN, "fixed_seed_offset": SEED},
             {"out": attention(*PACKED.values(), 0.25)[0], "seed_offset": SEED}, VARLEN_ATTRS),
    SlotCase("memory_efficient_attention", "bias", {"query": Q, "key": KEY, "value": VALUE, "bias": MASK},
             {"output": attention(Q, KEY, VALUE, 0.5, MASK)}),
]
