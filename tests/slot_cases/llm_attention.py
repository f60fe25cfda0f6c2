"""Cases for the optional inputs of the attention ops of LLM inference (gradc.ops.llm_attention): each output from
the kernel's formula written here with numpy, for one sequence of one head (head_dim 4, float32: the key cache in
chunks of 4, which for head_dim 4 is the plain layout)."""

import numpy as np

from . import SlotCase

R = np.random.default_rng(53)
X = R.standard_normal((1, 12)).astype(np.float32)      # q, k, v of 1 head, head_dim 4
CACHE = R.standard_normal((2, 1, 1, 3, 4)).astype(np.float32)
STEP1 = np.array([[1]], np.int32)
BIAS = R.standard_normal(12).astype(np.float32)
MASK = np.array([[[[0.0, -2.0, 0.5]]]], np.float32)
ROTARY = R.standard_normal((2, 1, 1, 1, 4)).astype(np.float32)
SHIFT, SMOOTH = R.standard_normal(4).astype(np.float32), R.standard_normal(4).astype(np.float32)


def attend(qkv, step, mask=None, rotary=None):
    """out [1, 4] of one step: q against the cache's keys 0..step-1 and the new key, softmax / (sum + 1e-6)."""
    q, k, v = qkv[:4].astype(np.float64), qkv[4:8].astype(np.float64), qkv[8:].astype(np.float64)
    if rotary is not None:   # adjacent pairs (use_neox_rotary_style false)
        cos, sin = rotary[0].reshape(4), rotary[1].reshape(4)
        q, k = (t * cos + np.array([-t[1], t[0], -t[3], t[2]]) * sin for t in (q, k))
    keys, values = np.vstack([CACHE[0, 0, 0, :step], k]), np.vstack([CACHE[1, 0, 0, :step], v])
    scores = keys @ q / 2 + (0 if mask is None else mask.reshape(-1)[:step + 1])
    p = np.exp(scores - scores.max())
    return (p @ values / (p.sum() + 1e-6))[None]


INTS = R.integers(-3000, 3000, (1, 24)).astype(np.int32)   # q, k, v of 1 head, head_dim 8 (float16's key chunk)
COLUMN_SCALES = R.uniform(2e-4, 8e-4, 24).astype(np.float32)
HALF_CACHE = R.standard_normal((2, 1, 1, 3, 8)).astype(np.float16)


def dequantized_step():
    """out [1, 8] in float16 of step 1 on x = float16(float32(ints) scale): the cached position 0 and the new k, v."""
    q, k, v = (INTS[0].astype(np.float32) * COLUMN_SCALES).astype(np.float16).astype(np.float64).reshape(3, 8)
    keys, values = np.vstack([HALF_CACHE[0, 0, 0, :1], k]), np.vstack([HALF_CACHE[1, 0, 0, :1], v])
    scores = keys @ q / np.sqrt(8)
    p = np.exp(scores - scores.max())
    return (p @ values / (p.sum() + 1e-6))[None].astype(np.float16)


Q, K, V = (R.standard_normal((1, 1, 2, 4)).astype(np.float32) for _ in range(3))
VARLEN_MASK = np.array([[[[0.0, -1.0], [0.5, 0.0]]]], np.float32)
LENGTHS = np.array([[2]], np.int32)


def varlen(mask):
    scores = Q[0, 0].astype(np.float64) @ K[0, 0].T * 0.5 + mask[0, 0]
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True) @ V[0, 0])[None, None]


BASE = {"x": X, "cache_kv": CACHE, "sequence_lengths": STEP1}
CASES = [
    SlotCase("masked_multihead_attention", "bias", {**BASE, "bias": BIAS}, {"out": attend(X[0] + BIAS, 1)}),
    SlotCase("masked_multihead_attention", "src_mask", {"x": X, "cache_kv": CACHE, "src_mask": MASK},
             {"out": attend(X[0], 2, MASK)}, overrides=False),
    SlotCase("masked_multihead_attention", "sequence_lengths", {**BASE, "src_mask": MASK},
             {"out": attend(X[0], 1, MASK)}),
    SlotCase("masked_multihead_attention", "rotary_tensor", {**BASE, "rotary_tensor": ROTARY},
             {"out": attend(X[0], 1, rotary=ROTARY)}, {"rotary_emb_dims": 1}, overrides=False),
    SlotCase("masked_multihead_attention", "beam_cache_offset", {**BASE, "beam_cache_offset": np.zeros(
        (1, 1, 3), np.int32)}, {"out": attend(X[0], 1), "beam_cache_offset_out": np.zeros((1, 1, 3), np.int32)},
        overrides=False),
    SlotCase("masked_multihead_attention", "out_shift", {**BASE, "out_shift": SHIFT, "out_smooth": SMOOTH},
             {"out": (attend(X[0], 1) + SHIFT) * SMOOTH}),
    SlotCase("masked_multihead_attention", "out_smooth", {**BASE, "out_shift": SHIFT, "out_smooth": SMOOTH},
             {"out": (attend(X[0], 1) + SHIFT) * SMOOTH}, overrides=False),
    SlotCase("masked_multihead_attention", "qkv_out_scale", {"x": INTS, "cache_kv": HALF_CACHE, "sequence_lengths":
             STEP1, "qkv_out_scale": COLUMN_SCALES}, {"out": dequantized_step()}, {"compute_dtype": "fp16"},
             overrides=False),   # without it an int32 x is refused
    SlotCase("variable_length_memory_efficient_attention", "mask", {
        "query": Q, "key": K, "value": V, "seq_lens": LENGTHS, "kv_seq_lens": LENGTHS, "mask": VARLEN_MASK},
        {"out": varlen(VARLEN_MASK)}, {"scale": 0.5}),
]
