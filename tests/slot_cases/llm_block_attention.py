"""Cases for the optional inputs of block_multihead_attention (gradc.ops.llm_block_attention): one head of 4
values, pages of 2 rows; a decode at step 1 (the cached row 0 of page 1 and the new token) or a prefill of 2
tokens, each output from the kernel's formula written here with numpy."""

import numpy as np

from . import SlotCase

R = np.random.default_rng(59)
QKV = R.standard_normal((2, 12)).astype(np.float32)
CACHE = R.standard_normal((2, 1, 2, 4)).astype(np.float32)
I32 = np.int32
PACKING = {"padding_offsets": np.zeros(2, I32), "cum_offsets": np.zeros(1, I32),
           "block_tables": np.array([[1, 0]], I32), "cu_seqlens_q": np.array([0, 2], I32),
           "cu_seqlens_k": np.array([0, 2], I32)}
DECODE = {"qkv": QKV[:1], "key_cache": CACHE, "value_cache": CACHE * 2, **PACKING,
          "padding_offsets": np.zeros(1, I32), "cu_seqlens_q": np.array([0, 1], I32),
          "cu_seqlens_k": np.array([0, 1], I32), "seq_lens_encoder": np.array([[0]], I32),
          "seq_lens_decoder": np.array([[1]], I32), "seq_lens_this_time": np.array([[1]], I32)}
PREFILL = {"qkv": QKV, "key_cache": CACHE, "value_cache": CACHE * 2, **PACKING,
           "seq_lens_encoder": np.array([[2]], I32), "seq_lens_decoder": np.array([[0]], I32),
           "seq_lens_this_time": np.array([[2]], I32)}
ATTRS = {"max_seq_len": 4, "block_size": 2}
BIAS = R.standard_normal(12).astype(np.float32)
TGT_MASK = np.array([[[[-1.0, 0.5, 0.0, 0.0]]]], np.float32)
MASK = np.array([[[[0.0, -0.5], [0.25, 0.0]]]], np.float32)
ROPE = R.standard_normal((2, 1, 4, 1, 2)).astype(np.float32)
ON = np.array([1], I32)


def decode(qkv, mask=0.0, turned=False, cache=CACHE):
    """out [1, 4]: q against the cached key (page 1, row 0) and its own key, softmax over (sum + 1e-6)."""
    q, k, v = (qkv[0, i:i + 4].astype(np.float64) for i in (0, 4, 8))
    if turned:   # pairs by the step-1 angles 1 / 10000^(2i / 4)
        angle = 1 / np.float32(10000) ** (np.arange(0, 4, 2, dtype=np.float32) / np.float32(4))
        cos, sin = np.cos(angle.astype(np.float64)), np.sin(angle.astype(np.float64))
        q, k = ((np.stack([t[0::2] * cos - t[1::2] * sin, t[1::2] * cos + t[0::2] * sin], -1).reshape(4))
                for t in (q, k))
    keys, values = np.vstack([cache[1, 0, 0], k]), np.vstack([cache[1, 0, 0] * 2, v])
    scores = keys @ q / 2 + mask
    p = np.exp(scores - scores.max())
    return (p @ values / (p.sum() + 1e-6))[None]


def prefill(mask=None):
    """out [2, 4] of the two tokens, causal unless a mask is given."""
    q, k, v = (QKV[:, i:i + 4].astype(np.float64) for i in (0, 4, 8))
    scores = q @ k.T / 2 + (np.array([[0, -np.inf], [0, 0]]) if mask is None else mask[0, 0])
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True) @ v


CODES = R.integers(0, 256, (2, 2, 1, 2, 4)).astype(np.uint8)   # the int8 cache's key and value bytes
SCALES = {"cache_k_quant_scales": np.array([3.0], np.float32), "cache_v_quant_scales": np.array([5.0], np.float32),
          "cache_k_dequant_scales": np.array([0.2], np.float32),
          "cache_v_dequant_scales": np.array([0.1], np.float32)}
INT8 = {**DECODE, "key_cache": CODES[0], "value_cache": CODES[1], **SCALES}


def int8_decode():
    """fmha_out and both caches: the cached row (page 1, row 0) dequantized, the new token's k and v quantized to
    rint(scale x) + 128 into page 1, row 1 and attended unquantized."""
    q, k, v = (QKV[0, i:i + 4].astype(np.float64) for i in (0, 4, 8))
    cached_k, cached_v = (np.float32(0.2) * (CODES[0, 1, 0, 0] - 128.0), np.float32(0.1) * (CODES[1, 1, 0, 0] - 128.0))
    scores = np.array([cached_k @ q, k @ q]) / 2
    p = np.exp(scores - scores.max())
    out = (p @ np.vstack([cached_v, v]) / (p.sum() + 1e-6))[None]
    keys, values = CODES[0].copy(), CODES[1].copy()
    keys[1, 0, 1] = np.clip(np.rint(np.float32(3) * QKV[0, 4:8]), -127, 127) + 128
    values[1, 0, 1] = np.clip(np.rint(np.float32(5) * QKV[0, 8:12]), -127, 127) + 128
    return {"fmha_out": out, "key_cache_out": keys, "value_cache_out": values}


INTS = R.integers(-3000, 3000, (1, 12)).astype(np.int32)   # an int8 GEMM's output
COLUMN_SCALES = R.uniform(2e-4, 8e-4, 12).astype(np.float32)
HALF_CACHE = CACHE.astype(np.float16)
INT32_QKV = {**DECODE, "qkv": INTS, "qkv_out_scale": COLUMN_SCALES, "key_cache": HALF_CACHE,
             "value_cache": HALF_CACHE * np.float16(2)}


def case(slot, inputs, expected, **options):
    return SlotCase("block_multihead_attention", slot, inputs, expected, ATTRS, **options)


CASES = [
    case("qkv_bias", {**DECODE, "qkv_bias": BIAS}, {"fmha_out": decode(QKV[:1] + BIAS)}),
    case("tgt_mask", {**DECODE, "tgt_mask": TGT_MASK}, {"fmha_out": decode(QKV[:1], TGT_MASK[0, 0, 0, :2])}),
    case("rope_emb", {**DECODE, "rope_emb": ROPE}, {"fmha_out": decode(QKV[:1], turned=True)}),
    case("mask", {**PREFILL, "mask": MASK}, {"fmha_out": prefill(MASK)}),
    case("max_enc_len_this_time", {**PREFILL, "max_enc_len_this_time": ON}, {"fmha_out": prefill()},
         overrides=False),
    case("max_dec_len_this_time", {**DECODE, "max_dec_len_this_time": ON}, {"fmha_out": decode(QKV[:1])},
         overrides=False),
    SlotCase("block_multihead_attention", "qkv_out_scale", INT32_QKV, {"fmha_out": decode(
        (INTS.astype(np.float32) * COLUMN_SCALES).astype(np.float16), cache=HALF_CACHE).astype(np.float16)},
        ATTRS | {"compute_dtype": "fp16"}, overrides=False),   # without it an int32 qkv is refused
    # the int8 cache takes all four scales: each value enters the expected bytes or output, so each is read
    *(case(slot, INT8, int8_decode(), overrides=False) for slot in SCALES),
    # without out_scale > 0 the kernel never reads them
    case("out_shift", {**DECODE, "out_shift": BIAS[:4], "out_smooth": BIAS[4:8]}, {"fmha_out": decode(QKV[:1])},
         overrides=False),
    case("out_smooth", {**DECODE, "out_smooth": BIAS[4:8]}, {"fmha_out": decode(QKV[:1])}, overrides=False),
]
