"""PaddleNLP's block attention (paddle.incubate.nn.functional.block_multihead_attention, blha_get_max_len): GPU-only
in Paddle 3.3.1, no gradient; gradc follows the CUDA kernels' formulas, in float64 inside.

The batch is packed: qkv [tokens, (H + 2 KVH) D] holds the tokens of all sequences back to back; token t sits at
padded index t + padding_offsets[t] of a [B, max_seq_len] grid (sequence = index / max_seq_len, position = index %
max_seq_len), and sequence b's first token is token b max_seq_len - cum_offsets[b]. The cache is paged:
key_cache and value_cache [num_blocks, KVH, block_size, D] hold position p of sequence b in block
block_tables[b, p / block_size], row p % block_size (a plain [block_size, D] block per head, unlike
masked_multihead_attention's chunked keys).

    qkv_out (qkv's var) = qkv + qkv_bias, with the rope applied to q and k of the prefill tokens
    prefill, each sequence with seq_lens_encoder[b] > 0 (its tokens cu_seqlens_q[b]..cu_seqlens_q[b + 1]):
        rope at the token's position from rope_emb read flat, L = rope_emb.shape[2]: pairs (2i, 2i + 1) turned by
        cos = rope_emb[i + pos D/2], sin = rope_emb[L D/2 + i + pos D/2]; use_neox_style: halves (i, i + D/2) by
        cos = rope_emb[i + pos D], sin = rope_emb[L D + i + pos D];
        causal softmax(q k^T / sqrt(D)) v over the sequence's own tokens (mask [B, 1, rows, cols] added instead
        of the causal triangle where given); k and v written to the cache at positions 0..len - 1
    decode, each sequence with seq_lens_decoder[b] = t > 0 (its one token, at cum_offsets): rope at position t,
        pairs turned by the angle t / rope_theta^(2i / D) (the kernel computes it; rope_emb's values are not read),
        use_neox_style halves by cos = rope_emb[d + t D], sin = rope_emb[L rope_emb.shape[4] + d + t D] for each d;
        k and v written at position t; out = sum_i p_i v_i / (sum_i p_i + 1e-6) over positions 0..t,
        p = exp(q k_i / sqrt(D) + tgt_mask[b, 0 or h, 0, i] - max)
    query head h reads kv head h / (H / KVH); fmha_out [tokens, H D] holds each token's attention, 0 where no
    phase ran (Paddle leaves those rows unwritten).
max_enc_len_this_time / max_dec_len_this_time (blha_get_max_len: the max over the batch of seq_lens_encoder /
seq_lens_decoder, [1] int32), when given, only switch a phase off (0) or on.

The int8 cache (cache_k_quant_scales, cache_v_quant_scales, cache_k_dequant_scales, cache_v_dequant_scales, all
[KVH] float32; key_cache and value_cache uint8): a value x of kv head g is stored as code(x) + 128,
    prefill: code = clip(round(float32(k_quant_scale[g]) * x)) with quant_round_type 0 ties to even, else half away
             from zero, clipped to [quant_min_bound, quant_max_bound];
    decode:  code = clip(rint(x * k_quant_scale[g]), -127, 127), the product in qkv's dtype (the kernel's fixed
             round_tmp, which reads no attribute);
and read back as dequant_scale[g] (u - 128). Attention uses the unquantized k and v of the tokens being written
(prefill: all of them; decode: the new token) and the dequantized cache for earlier positions.
An int32 qkv (an int8 GEMM's output) with qkv_out_scale [(H + 2 KVH) D] float32 and compute_dtype "fp16" runs in
float16: qkv = float16(float32(qkv) qkv_out_scale[column]) before the bias; qkv_out stays the int32 qkv (the kernel
turns a buffer of its own). out_scale > 0 writes fmha_out as int8 as masked_multihead_attention does (out_shift and
out_smooth, both given, applied first in the compute dtype; either alone is ignored, as the kernel ignores it), and
out_shift and out_smooth are ignored without it. Refused: compute_dtype "bf16" with an int32 qkv, float8 fmha_out
(quant_max_bound 448).
dynamic_cachekv_quant with the int8 cache (the four scales [B, KVH]): each prefilling sequence b measures its row,
quant[b, g] = 127 / max |x| (float32) over the k (or v) values of kv head g of every token of the batch (the
kernel's max runs over all of qkv, bias added and prefill tokens turned), dequant[b, g] = 1 / quant[b, g]; its
tokens and prefix are coded clip(round(float32(x) quant[b, g]), -127, 127) + 128, half away from zero whatever
quant_round_type and the bounds say; decode reads and writes with row b (the fed row for a sequence not
prefilling). Paddle's kernel writes the measured scales into the four scale inputs in place (the op declares no
output for them), and so does gradc's: a decode in a later op or run reads the measured rows. Paddle's decode
kernel and its prefix writer read row 0 (scales[g]) for every sequence, which dequantizes sequence b > 0 with
sequence 0's scales; gradc reads row b.

The prefix cache (pre_key_cache, pre_value_cache [B, KVH, P, D] in the compute dtype): for a prefilling sequence
the kernel pages the prefix in at cache positions 0..P-1 (the int8 cache codes it by the prefill's rounding) and
the sequence's tokens at P + position; every token attends to the whole prefix and then to tokens 0..i (with mask
[B, 1 or H, rows, P + rows] added instead of the triangle); decode at step t reads positions 0..t + P - 1 and
writes t + P, tgt_mask over columns 0..t + P, the rope still at t. Paddle's CUDA kernel differs (gradc follows the
formulas): its prefill splits the raw qkv (without qkv_bias, rope or dequantizing) for the attention, runs no causal
triangle without a mask, splits GQA as if KVH = H, and its neox decode reads rope_emb's row t + P.
"""

from __future__ import annotations

from ..ir import VarType, dtype_name
from ..registry import defop
from .llm_attention import check_numel, int32_compute_dtype

INPUTS = ["qkv", "key_cache", "value_cache", "seq_lens_encoder", "seq_lens_decoder", "seq_lens_this_time",
          "padding_offsets", "cum_offsets", "cu_seqlens_q", "cu_seqlens_k", "block_tables", "pre_key_cache?",
          "pre_value_cache?", "rope_emb?", "mask?", "tgt_mask?", "cache_k_quant_scales?", "cache_v_quant_scales?",
          "cache_k_dequant_scales?", "cache_v_dequant_scales?", "qkv_out_scale?", "qkv_bias?", "out_shift?",
          "out_smooth?", "max_enc_len_this_time?", "max_dec_len_this_time?"]
CACHE_SCALES = ("cache_k_quant_scales", "cache_v_quant_scales", "cache_k_dequant_scales", "cache_v_dequant_scales")
INT32_SLOTS = ("seq_lens_encoder", "seq_lens_decoder", "seq_lens_this_time", "padding_offsets", "cum_offsets",
               "cu_seqlens_q", "cu_seqlens_k", "block_tables")
ATTRS = {"max_seq_len": 0, "block_size": 0, "use_neox_style": False, "dynamic_cachekv_quant": False,
         "quant_round_type": 1, "quant_max_bound": 127.0, "quant_min_bound": -127.0, "out_scale": -1.0,
         "compute_dtype": "default", "rope_theta": 10000.0}


def _refusals(ctx) -> None:
    for slot in INT32_SLOTS:
        if ctx.dtype(slot) not in (VarType.INT32, None):
            ctx.fail(f"{slot} must be int32 (the kernel reads ints), got {dtype_name(ctx.dtype(slot))}")
    if ctx.has("rope_emb") and ctx.dtype("rope_emb") not in (VarType.FP32, None):
        ctx.fail("rope_emb must be float32 (the kernel reads floats)")


def _same_dtype(ctx, dtype, *slots) -> None:
    for slot in slots:
        if ctx.has(slot) and ctx.dtype(slot) not in (dtype, None):
            ctx.fail(f"{slot} must be {dtype_name(dtype)} (the kernel's compute dtype), got "
                     f"{dtype_name(ctx.dtype(slot))}")


def _cache_dtype(ctx, dtype):
    """uint8 for the int8 cache (all four scales given, [kv_heads] float32 each), else the compute dtype."""
    given = [slot for slot in CACHE_SCALES if ctx.has(slot)]
    if not given:
        _same_dtype(ctx, dtype, "key_cache", "value_cache")
        return dtype
    if len(given) < len(CACHE_SCALES):
        ctx.fail(f"the int8 cache needs all of {', '.join(CACHE_SCALES)}, got only {', '.join(given)}")
    cache, batch = ctx.shape("key_cache"), ctx.shape("cum_offsets")
    kv_heads = cache[1] if cache is not None and len(cache) == 4 else -1
    if ctx.attr("dynamic_cachekv_quant"):   # a row of scales per sequence
        rows = batch[0] if batch is not None and len(batch) == 1 else -1
        kv_heads = kv_heads * rows if min(rows, kv_heads) >= 0 else -1
    for slot in (*CACHE_SCALES, "key_cache", "value_cache"):
        want = VarType.UINT8 if slot.endswith("cache") else VarType.FP32
        if ctx.dtype(slot) not in (want, None):
            ctx.fail(f"{slot} must be {dtype_name(want)} for the int8 cache, got {dtype_name(ctx.dtype(slot))}")
    for slot in CACHE_SCALES:
        check_numel(ctx, slot, kv_heads, "batch kv_heads" if ctx.attr("dynamic_cachekv_quant") else "kv_heads")
    if not -128 <= ctx.attr("quant_min_bound") <= ctx.attr("quant_max_bound") <= 127:
        ctx.fail(f"quant_min_bound={ctx.attr('quant_min_bound')}, quant_max_bound={ctx.attr('quant_max_bound')}: "
                 "a code + 128 must fit the uint8 cache")
    return VarType.UINT8


def _out_dtype(ctx, dtype):
    """int8 with out_scale > 0 (Paddle's infermeta: for an int32 qkv, or at quant_max_bound 127), else ``dtype``."""
    if ctx.attr("out_scale") <= 0:
        return dtype
    low, high = ctx.attr("quant_min_bound"), ctx.attr("quant_max_bound")
    if ctx.dtype("qkv") != VarType.INT32 and high != 127:
        ctx.fail(f"out_scale > 0 with quant_max_bound={high}: Paddle writes int8 only at 127 (float8_e4m3fn at 448, "
                 "not supported)")
    if not -128 <= low <= high <= 127:
        ctx.fail(f"quant_min_bound={low}, quant_max_bound={high}: out_scale > 0 writes int8")
    return VarType.INT8


def _prefix(ctx, dtype, kv_heads: int, dim: int) -> None:
    """pre_key_cache and pre_value_cache together, [batch, kv_heads, prefix, head_dim] in the compute dtype."""
    given = [slot for slot in ("pre_key_cache", "pre_value_cache") if ctx.has(slot)]
    if len(given) == 1:
        ctx.fail(f"{given[0]} needs its partner: the prefix cache is pre_key_cache and pre_value_cache")
    if not given:
        return
    _same_dtype(ctx, dtype, *given)
    keys, values, batch = ctx.shape("pre_key_cache"), ctx.shape("pre_value_cache"), ctx.shape("cum_offsets")
    if keys is None or values is None or min(keys, default=0) < 0:
        return
    if len(keys) != 4 or keys != values or keys[1] != kv_heads or keys[3] != dim or (
            batch is not None and min(batch) >= 0 and keys[0] != batch[0]):
        ctx.fail(f"pre_key_cache {keys} and pre_value_cache {values} must both be [batch, kv_heads={kv_heads}, "
                 f"prefix, head_dim={dim}] (batch from cum_offsets {batch})")


def _blha_infer(ctx):
    _refusals(ctx)
    dtype = int32_compute_dtype(ctx, "qkv")
    _same_dtype(ctx, dtype, "qkv_bias", "mask", "tgt_mask")
    cache_dtype, out_dtype = _cache_dtype(ctx, dtype), _out_dtype(ctx, dtype)
    qkv, cache = ctx.shape("qkv"), ctx.shape("key_cache")
    results = {"qkv_out": (qkv, ctx.dtype("qkv")), "key_cache_out": (cache, cache_dtype),
               "value_cache_out": (ctx.shape("value_cache"), cache_dtype)}
    if qkv is None or cache is None:
        return results | {"fmha_out": (None, out_dtype)}
    if len(qkv) != 2 or len(cache) != 4 or ctx.shape("value_cache") != cache:
        ctx.fail(f"needs qkv [tokens, (heads + 2 kv_heads) head_dim] and key_cache, value_cache [blocks, kv_heads, "
                 f"block_size, head_dim], got {qkv}, {cache} and {ctx.shape('value_cache')}")
    kv_heads, block, dim = cache[1:]
    if min(qkv[1], kv_heads, dim) < 0:
        return results | {"fmha_out": ([qkv[0], -1], out_dtype)}
    heads = qkv[1] // dim - 2 * kv_heads
    if qkv[1] % dim or heads <= 0 or heads % kv_heads:
        ctx.fail(f"qkv's last dim {qkv[1]} must be (heads + 2 * {kv_heads}) * head_dim {dim}, heads a multiple of "
                 f"{kv_heads}")
    check_numel(ctx, "qkv_bias", qkv[1], "(heads + 2 kv_heads) head_dim")
    check_numel(ctx, "qkv_out_scale", qkv[1], "(heads + 2 kv_heads) head_dim")
    if ctx.has("qkv_out_scale") and qkv[1] % 4:
        ctx.fail(f"qkv's last dim {qkv[1]} must be a multiple of 4 with qkv_out_scale (the kernel reads its scales 4 "
                 "at a time)")
    if block >= 0 and ctx.attr("block_size") != block:
        ctx.fail(f"block_size={ctx.attr('block_size')} must be key_cache's block size {block}")
    if ctx.attr("max_seq_len") <= 0:
        ctx.fail(f"max_seq_len={ctx.attr('max_seq_len')} must be positive: it is the padded sequence length")
    _prefix(ctx, dtype, kv_heads, dim)
    for slot in ("mask", "tgt_mask"):
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if shape is not None and (len(shape) != 4 or shape[1] not in (1, heads, -1)):
            ctx.fail(f"{slot} must be [batch, 1 or heads={heads}, rows, cols], got {shape}")
    return results | {"fmha_out": ([qkv[0], heads * dim], out_dtype)}


defop("block_multihead_attention", INPUTS, ["fmha_out", "qkv_out", "key_cache_out", "value_cache_out"],
      attrs=ATTRS, infer=_blha_infer)


def _max_len_infer(ctx):
    for slot in ("seq_lens_encoder", "seq_lens_decoder"):
        if ctx.dtype(slot) not in (VarType.INT32, None):
            ctx.fail(f"{slot} must be int32 (the kernel reads ints), got {dtype_name(ctx.dtype(slot))}")
    return {"max_enc_len_this_time": ([1], VarType.INT32), "max_dec_len_this_time": ([1], VarType.INT32)}


defop("blha_get_max_len", ["seq_lens_encoder", "seq_lens_decoder", "batch_size"],
      ["max_enc_len_this_time", "max_dec_len_this_time"], infer=_max_len_infer)
