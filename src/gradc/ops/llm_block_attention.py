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
seq_lens_decoder, [1] int32), when given, only switch a phase off (0) or on. Refused: the quantized paths (int32
qkv with qkv_out_scale, cache quant scales, out_scale > 0), the prefix cache (pre_key_cache, pre_value_cache);
out_shift and out_smooth act only with out_scale > 0 and are otherwise ignored, as the kernel ignores them.
"""

from __future__ import annotations

from ..ir import VarType, dtype_name
from ..registry import defop
from .infer import one_dtype
from .llm_attention import check_half_float, check_numel

INPUTS = ["qkv", "key_cache", "value_cache", "seq_lens_encoder", "seq_lens_decoder", "seq_lens_this_time",
          "padding_offsets", "cum_offsets", "cu_seqlens_q", "cu_seqlens_k", "block_tables", "pre_key_cache?",
          "pre_value_cache?", "rope_emb?", "mask?", "tgt_mask?", "cache_k_quant_scales?", "cache_v_quant_scales?",
          "cache_k_dequant_scales?", "cache_v_dequant_scales?", "qkv_out_scale?", "qkv_bias?", "out_shift?",
          "out_smooth?", "max_enc_len_this_time?", "max_dec_len_this_time?"]
REFUSED = {"qkv_out_scale": "the quantized path (int32 qkv dequantized)",
           "cache_k_quant_scales": "the int8 cache", "cache_v_quant_scales": "the int8 cache",
           "cache_k_dequant_scales": "the int8 cache", "cache_v_dequant_scales": "the int8 cache",
           "pre_key_cache": "the prefix cache", "pre_value_cache": "the prefix cache"}
INT32_SLOTS = ("seq_lens_encoder", "seq_lens_decoder", "seq_lens_this_time", "padding_offsets", "cum_offsets",
               "cu_seqlens_q", "cu_seqlens_k", "block_tables")
ATTRS = {"max_seq_len": 0, "block_size": 0, "use_neox_style": False, "dynamic_cachekv_quant": False,
         "quant_round_type": 1, "quant_max_bound": 127.0, "quant_min_bound": -127.0, "out_scale": -1.0,
         "compute_dtype": "default", "rope_theta": 10000.0}


def _refusals(ctx) -> None:
    for slot, what in REFUSED.items():
        if ctx.has(slot):
            ctx.fail(f"{slot}: {what} is not supported")
    if ctx.attr("out_scale") > 0 or ctx.attr("dynamic_cachekv_quant"):
        ctx.fail(f"out_scale={ctx.attr('out_scale')}, dynamic_cachekv_quant={ctx.attr('dynamic_cachekv_quant')}:"
                 " the quantized outputs are not supported")
    for slot in INT32_SLOTS:
        if ctx.dtype(slot) not in (VarType.INT32, None):
            ctx.fail(f"{slot} must be int32 (the kernel reads ints), got {dtype_name(ctx.dtype(slot))}")
    if ctx.has("rope_emb") and ctx.dtype("rope_emb") not in (VarType.FP32, None):
        ctx.fail("rope_emb must be float32 (the kernel reads floats)")


def _blha_infer(ctx):
    _refusals(ctx)
    check_half_float(ctx, "qkv")
    dtype = one_dtype(ctx, "qkv", "key_cache", "value_cache", *(s for s in ("qkv_bias", "mask", "tgt_mask")
                                                                   if ctx.has(s)))
    qkv, cache = ctx.shape("qkv"), ctx.shape("key_cache")
    results = {"qkv_out": (qkv, dtype), "key_cache_out": (cache, dtype),
               "value_cache_out": (ctx.shape("value_cache"), dtype)}
    if qkv is None or cache is None:
        return results | {"fmha_out": (None, dtype)}
    if len(qkv) != 2 or len(cache) != 4 or ctx.shape("value_cache") != cache:
        ctx.fail(f"needs qkv [tokens, (heads + 2 kv_heads) head_dim] and key_cache, value_cache [blocks, kv_heads, "
                 f"block_size, head_dim], got {qkv}, {cache} and {ctx.shape('value_cache')}")
    kv_heads, block, dim = cache[1:]
    if min(qkv[1], kv_heads, dim) < 0:
        return results | {"fmha_out": ([qkv[0], -1], dtype)}
    heads = qkv[1] // dim - 2 * kv_heads
    if qkv[1] % dim or heads <= 0 or heads % kv_heads:
        ctx.fail(f"qkv's last dim {qkv[1]} must be (heads + 2 * {kv_heads}) * head_dim {dim}, heads a multiple of "
                 f"{kv_heads}")
    check_numel(ctx, "qkv_bias", qkv[1], "(heads + 2 kv_heads) head_dim")
    if block >= 0 and ctx.attr("block_size") != block:
        ctx.fail(f"block_size={ctx.attr('block_size')} must be key_cache's block size {block}")
    if ctx.attr("max_seq_len") <= 0:
        ctx.fail(f"max_seq_len={ctx.attr('max_seq_len')} must be positive: it is the padded sequence length")
    for slot in ("mask", "tgt_mask"):
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if shape is not None and (len(shape) != 4 or shape[1] not in (1, heads, -1)):
            ctx.fail(f"{slot} must be [batch, 1 or heads={heads}, rows, cols], got {shape}")
    return results | {"fmha_out": ([qkv[0], heads * dim], dtype)}


defop("block_multihead_attention", INPUTS, ["fmha_out", "qkv_out", "key_cache_out", "value_cache_out"],
      attrs=ATTRS, infer=_blha_infer)


def _max_len_infer(ctx):
    for slot in ("seq_lens_encoder", "seq_lens_decoder"):
        if ctx.dtype(slot) not in (VarType.INT32, None):
            ctx.fail(f"{slot} must be int32 (the kernel reads ints), got {dtype_name(ctx.dtype(slot))}")
    return {"max_enc_len_this_time": ([1], VarType.INT32), "max_dec_len_this_time": ([1], VarType.INT32)}


defop("blha_get_max_len", ["seq_lens_encoder", "seq_lens_decoder", "batch_size"],
      ["max_enc_len_this_time", "max_dec_len_this_time"], infer=_max_len_infer)
