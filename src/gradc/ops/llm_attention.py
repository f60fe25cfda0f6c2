"""The attention ops of PaddleNLP's inference exports (GPU-only in Paddle 3.3.1; no gradient): gradc follows the
CUDA kernels' formulas, in float64 inside.

masked_multihead_attention (paddle.incubate.nn.functional.masked_multihead_attention): one decoding step of each
    sequence b against its cache. x [B, (H + 2 KVH) D] holds q, k, v (+ bias); cache_kv [2, B', KVH, S, D] (B' >= B)
    holds the keys and values of the earlier steps, the keys in the kernel's 16-byte chunked layout (each [S, D]
    block of keys is stored as [D / X, S, X], X = 16 / itemsize: 4 for float32, 8 for float16 / bfloat16), the
    values plainly. Step t = sequence_lengths[b] (or src_mask's last dim - 1): rope on q and k (rotary_tensor
    [2, B, 1, 1, D] float32, cos then sin; use_neox_rotary_style rotates halves of each D / rotary_emb_dims chunk,
    else adjacent pairs), k and v written at cache position t (cache_kv_out is cache_kv's var), then
    out = sum_i p_i v_i / (sum_i p_i + 1e-6) over positions 0..t, p = exp(q k_i / sqrt(D) + src_mask - max), with
    query head h reading kv head h / (H / KVH); with out_shift, out = (out + out_shift) out_smooth (out_smooth
    alone is ignored, as Paddle's kernel ignores it).
    A negative sequence length skips the sequence (out 0 there, where Paddle leaves its memory unwritten).
    An int32 x (an int8 GEMM's output) with qkv_out_scale [(H + 2 KVH) D] float32 and compute_dtype "fp16" runs in
    float16: x = float16(float32(x) qkv_out_scale[column]) before the bias. out_scale > 0 writes int8 out =
    clip(round(float32(quant_max_bound out_scale) o)) into [quant_min_bound, quant_max_bound], o the output in the
    compute dtype (after (o + out_shift) out_smooth in that dtype), quant_round_type 0 ties to even, else half away
    from zero. beam_cache_offset [B / beams, beams, S] int32 (beam search; x's rows are beams of B / beams
    sources): position i < t of sequence b is read from beam o = beam_cache_offset[b, i] of b's group, from b's
    own cache where o = 0 (the kernel's test), from the cache as it was before this step; beam_cache_offset_out
    is its var, unchanged. cum_offsets (Paddle refuses it too), compute_dtype "bf16" with an int32 x, an offset
    outside 0 .. beams - 1, and moving offsets with GQA or a cache of more sequences than x (the kernel then
    addresses other beams with x's batch and query heads, off the cache's rows) are refused.
variable_length_memory_efficient_attention (paddle.incubate.nn.functional.variable_length_memory_efficient_attention,
    CUTLASS's grouped memory-efficient attention): query [B, H, Sq, D], key and value [B, KVH, Sk, D or Dv]; for
    sequence b, its first seq_lens[b] query rows attend to its first kv_seq_lens[b] + pre_cache_length keys (no
    pre cache for a sequence with no query rows): out = softmax(q k^T scale + mask) v, mask [B, 1 or H, rows,
    cols] added where given, causal keeping key j <= query row i (the kernel's top-left diagonal, which
    pre_cache_length does not move); query head h reads kv head h / (H / KVH). Rows past seq_lens[b] are 0
    (Paddle leaves them unwritten), and so is a row with no key.
"""

from __future__ import annotations

from ..ir import VarType, dtype_name
from ..registry import defop
from .infer import one_dtype

HALF_FLOATS = (VarType.FP32, VarType.FP16, VarType.BF16)
MMHA_ATTRS = {"seq_len": 0, "rotary_emb_dims": 0, "use_neox_rotary_style": False, "compute_dtype": "default",
              "out_scale": -1.0, "quant_round_type": 1, "quant_max_bound": 127.0, "quant_min_bound": -127.0}


def check_half_float(ctx, slot: str) -> None:
    """Paddle's kernels run float32, float16 and bfloat16 only (the cache layout depends on the itemsize)."""
    dtype = ctx.dtype(slot)
    if dtype is not None and dtype not in HALF_FLOATS:
        ctx.fail(f"{slot} must be float32, float16 or bfloat16 (Paddle's kernel dtypes), got {dtype_name(dtype)}")


def chunk(dtype) -> int:
    """X, the values per 16-byte chunk of the key cache's layout."""
    return 4 if dtype in (VarType.FP32, None) else 8


def check_numel(ctx, slot: str, size: int, what: str) -> None:
    shape = ctx.shape(slot) if ctx.has(slot) else None
    if shape is not None and min(shape, default=0) >= 0 and size >= 0 and _product(shape) != size:
        ctx.fail(f"{slot} {shape} must hold {what} = {size} values")


def _product(shape) -> int:
    total = 1
    for n in shape:
        total *= n
    return total


def int32_compute_dtype(ctx, slot: str):
    """``slot``'s dtype, or float16 for an int32 ``slot`` that qkv_out_scale dequantizes (compute_dtype "fp16")."""
    if ctx.dtype(slot) != VarType.INT32:
        if ctx.has("qkv_out_scale"):
            ctx.fail(f"qkv_out_scale needs an int32 {slot} (the kernel dequantizes ints), got "
                     f"{dtype_name(ctx.dtype(slot))}")
        check_half_float(ctx, slot)
        return ctx.dtype(slot)
    if not ctx.has("qkv_out_scale"):
        ctx.fail(f"an int32 {slot} needs qkv_out_scale (without it the kernel would read the ints as floats)")
    if ctx.attr("compute_dtype") != "fp16":
        ctx.fail(f"compute_dtype={ctx.attr('compute_dtype')!r}: an int32 {slot} runs in float16 with 'fp16' ('bf16' "
                 "is not supported; Paddle's kernel runs nothing for any other value)")
    if ctx.dtype("qkv_out_scale") not in (VarType.FP32, None):
        ctx.fail(f"qkv_out_scale must be float32, got {dtype_name(ctx.dtype('qkv_out_scale'))}")
    return VarType.FP16


def _mmha_refusals(ctx) -> None:
    if ctx.attr("out_scale") > 0 and not -128 <= ctx.attr("quant_min_bound") <= ctx.attr("quant_max_bound") <= 127:
        ctx.fail(f"quant_min_bound={ctx.attr('quant_min_bound')}, quant_max_bound={ctx.attr('quant_max_bound')}: "
                 "out_scale > 0 writes int8")
    if ctx.has("cum_offsets"):
        ctx.fail("cum_offsets is not supported (Paddle's kernel refuses it too)")
    if ctx.has("out_shift") and not ctx.has("out_smooth"):
        ctx.fail("out_shift needs out_smooth: Paddle's kernel scales the shifted output by it")
    if not ctx.has("src_mask") and not ctx.has("sequence_lengths"):
        ctx.fail("needs src_mask or sequence_lengths: without them Paddle's kernel writes past the cache")


def _mmha_infer(ctx):
    _mmha_refusals(ctx)
    dtype = int32_compute_dtype(ctx, "x")
    for slot in ("cache_kv", "bias", "src_mask", "out_shift", "out_smooth"):
        if ctx.has(slot) and ctx.dtype(slot) not in (dtype, None):
            ctx.fail(f"{slot} must be {dtype_name(dtype)} (the kernel's compute dtype), got "
                     f"{dtype_name(ctx.dtype(slot))}")
    out_dtype = VarType.INT8 if ctx.attr("out_scale") > 0 else dtype
    x, cache = ctx.shape("x"), ctx.shape("cache_kv")
    if x is None or cache is None:
        return {"out": (None, out_dtype), "cache_kv_out": (cache, dtype)}
    if len(x) != 2 or len(cache) != 5 or cache[0] != 2:
        ctx.fail(f"needs x [batch, (heads + 2 kv_heads) head_dim] and cache_kv [2, batch, kv_heads, max_seq, "
                 f"head_dim], got x {x} and cache_kv {cache}")
    batch, kv_heads, head_dim = x[0], cache[2], cache[4]
    if min(x[1], head_dim, kv_heads) < 0:
        return {"out": ([batch, -1], out_dtype), "cache_kv_out": (cache, dtype)}
    heads = x[1] // head_dim - 2 * kv_heads
    if x[1] % head_dim or heads <= 0 or heads % kv_heads or head_dim % chunk(dtype):
        ctx.fail(f"x's last dim {x[1]} must be (heads + 2 * {kv_heads}) * head_dim {head_dim}, heads a multiple of "
                 f"{kv_heads}, and head_dim a multiple of {chunk(dtype)} (the key cache's chunk)")
    if min(batch, cache[1]) >= 0 and cache[1] < batch:
        ctx.fail(f"cache_kv holds {cache[1]} sequences, fewer than x's {batch}")
    check_numel(ctx, "bias", x[1], "(heads + 2 kv_heads) head_dim")
    check_numel(ctx, "qkv_out_scale", x[1], "(heads + 2 kv_heads) head_dim")
    for slot in ("out_shift", "out_smooth"):
        check_numel(ctx, slot, heads * head_dim, "heads head_dim")
    _mmha_rotary(ctx, batch, head_dim)
    _mmha_beams(ctx, batch, cache[3])
    mask = ctx.shape("src_mask") if ctx.has("src_mask") else None
    if mask is not None and (len(mask) != 4 or mask[1] not in (1, heads, -1) or mask[2] not in (1, -1)):
        ctx.fail(f"src_mask must be [batch, 1 or heads={heads}, 1, steps + 1], got {mask}")
    return {"out": ([batch, heads * head_dim], out_dtype), "cache_kv_out": (cache, dtype),
            "beam_cache_offset_out": (ctx.shape("beam_cache_offset"), ctx.dtype("beam_cache_offset"))}


def _mmha_beams(ctx, batch: int, seq: int) -> None:
    """beam_cache_offset [batch / beams, beams, max_seq]: the kernel reads row b at stride max_seq."""
    if not ctx.has("beam_cache_offset"):
        return
    if ctx.dtype("beam_cache_offset") not in (VarType.INT32, None):
        ctx.fail(f"beam_cache_offset must be int32, got {dtype_name(ctx.dtype('beam_cache_offset'))}")
    shape = ctx.shape("beam_cache_offset")
    if shape is None or min(shape, default=0) < 0 or min(batch, seq) < 0:
        return
    if len(shape) != 3 or shape[0] * shape[1] != batch or shape[2] != seq:
        ctx.fail(f"beam_cache_offset must be [batch / beams, beams, max_seq] with batch {batch} and cache_kv's "
                 f"max_seq {seq}, got {shape}")


def _mmha_rotary(ctx, batch: int, head_dim: int) -> None:
    dims = ctx.attr("rotary_emb_dims")
    if dims <= 0:
        return
    if not ctx.has("rotary_tensor"):
        ctx.fail(f"rotary_emb_dims={dims} needs rotary_tensor")
    if ctx.dtype("rotary_tensor") not in (VarType.FP32, None):
        ctx.fail("rotary_tensor must be float32 (the kernel reads floats)")
    check_numel(ctx, "rotary_tensor", 2 * batch * head_dim, "2 (cos, sin) batch head_dim")
    if ctx.attr("use_neox_rotary_style") and head_dim % (2 * dims):
        ctx.fail(f"head_dim {head_dim} must split into rotary_emb_dims={dims} chunks of even size")


defop("masked_multihead_attention", ["x", "cache_kv", "bias?", "src_mask?", "cum_offsets?", "sequence_lengths?",
                                     "rotary_tensor?", "beam_cache_offset?", "qkv_out_scale?", "out_shift?",
                                     "out_smooth?"],
      ["out", "cache_kv_out", "beam_cache_offset_out"], attrs=MMHA_ATTRS, infer=_mmha_infer)


def _varlen_infer(ctx):
    check_half_float(ctx, "query")
    dtype = one_dtype(ctx, "query", "key", "value", *(("mask",) if ctx.has("mask") else ()))
    for slot in ("seq_lens", "kv_seq_lens"):
        if ctx.dtype(slot) not in (VarType.INT32, None):
            ctx.fail(f"{slot} must be int32 (the kernel reads ints), got {dtype_name(ctx.dtype(slot))}")
    query, key, value = (ctx.shape(slot) for slot in ("query", "key", "value"))
    if query is None or key is None or value is None:
        return {"out": (None, dtype)}
    if len(query) != 4 or len(key) != 4 or len(value) != 4:
        ctx.fail(f"query, key and value must be [batch, heads, seq_len, head_dim], got {query}, {key}, {value}")
    if key[:3] != value[:3] or key[3] != query[3] or key[0] != query[0] or min(key[1], query[1]) > 0 and (
            query[1] % key[1]):
        ctx.fail(f"key {key} and value {value} must share batch, heads and seq_len with each other, key the "
                 f"head_dim and batch of query {query}, and key's heads divide query's")
    if ctx.attr("pre_cache_length") < 0:
        ctx.fail(f"pre_cache_length={ctx.attr('pre_cache_length')} must not be negative")
    mask = ctx.shape("mask") if ctx.has("mask") else None
    if mask is not None and (len(mask) != 4 or mask[1] not in (1, query[1], -1)):
        ctx.fail(f"mask must be [batch, 1 or heads={query[1]}, rows, cols], got {mask}")
    return {"out": ([*query[:3], value[3]], dtype)}


defop("variable_length_memory_efficient_attention", ["query", "key", "value", "seq_lens", "kv_seq_lens", "mask?"],
      ["out"], attrs={"scale": 0.0, "causal": False, "pre_cache_length": 0}, infer=_varlen_infer)
