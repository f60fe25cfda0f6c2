"""Kernels of gradc.ops.llm_attention: masked_multihead_attention (one decoding step against a cache) and
variable_length_memory_efficient_attention, in float64 inside, cast once to the input's dtype."""

from __future__ import annotations

import numpy as np

from . import kernel


def keys_from_layout(block: np.ndarray, width: int) -> np.ndarray:
    """[..., S, D] keys stored in the chunked layout [..., D / X, S, X] (same memory, same shape) -> plain."""
    *lead, seq, dim = block.shape
    chunks = block.reshape(*lead, dim // width, seq, width)
    return np.moveaxis(chunks, -3, -2).reshape(*lead, seq, dim)


def keys_to_layout(keys: np.ndarray, width: int) -> np.ndarray:
    *lead, seq, dim = keys.shape
    chunks = keys.reshape(*lead, seq, dim // width, width)
    return np.moveaxis(chunks, -2, -3).reshape(*lead, seq, dim)


def rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, neox: bool, dims: int) -> np.ndarray:
    """x cos + rot(x) sin over the last dim: neox style rotates the halves of each of ``dims`` chunks
    (rot = [-x2, x1]), the other style adjacent pairs (rot = [-x1, x0])."""
    if neox:
        parts = x.reshape(*x.shape[:-1], dims, 2, -1)
        rotated = np.concatenate([-parts[..., 1:, :], parts[..., :1, :]], axis=-2).reshape(x.shape)
    else:
        rotated = np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)
    return x * cos + rotated * sin


def softmax_attend(scores: np.ndarray, values: np.ndarray) -> np.ndarray:
    """sum p v / (sum p + 1e-6), p = exp(scores - max) over the last axis: the MMHA kernels' normalisation."""
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.einsum("...s,...sd->...d", p, values) / (p.sum(axis=-1)[..., None] + 1e-6)


def dequantized(k, x: np.ndarray) -> np.ndarray:
    """An int32 GEMM output times qkv_out_scale per column, in float32, stored as float16; other inputs as given."""
    scale = k.optional("qkv_out_scale")
    if scale is None:
        return x
    return (x.astype(np.float32) * scale.reshape(-1).astype(np.float32)).astype(np.float16)


def quantized_out(k, out: np.ndarray, shift) -> np.ndarray:
    """out (in the compute dtype) as int8: (out + shift) smooth in that dtype, then
    clip(round(float32(quant_max_bound out_scale) out)), ties by quant_round_type (0 to even, else away from 0)."""
    if shift is not None:
        out = ((out + shift.reshape(-1).astype(out.dtype)).astype(out.dtype)
               * k.x("out_smooth").reshape(-1).astype(out.dtype)).astype(out.dtype)
    high, low = k.attr("quant_max_bound"), k.attr("quant_min_bound")
    product = (np.float32(high) * np.float32(k.attr("out_scale")) * out.astype(np.float32)).astype(np.float64)
    if k.attr("quant_round_type") == 0:
        rounded = np.rint(product)
    else:   # C's round(), exact here as the float32 product is exact in float64
        rounded = np.sign(product) * np.floor(np.abs(product) + 0.5)
    return np.clip(rounded, low, high).astype(np.int8)


def beam_sources(offsets, b: int, step: int, beams: int) -> np.ndarray:
    """The cache sequence read at each position before ``step``: offset o > 0 is beam o of b's group, offset 0
    b itself (the kernel's ``if (beam_offset)`` falls back to the own cache, not to beam 0)."""
    own = np.full(step, b)
    if offsets is None:
        return own
    row = offsets.reshape(-1, offsets.shape[-1])[b, :step].astype(np.int64)
    if row.min(initial=0) < 0 or row.max(initial=0) >= beams:
        raise ValueError(f"sequence {b}'s beam_cache_offset holds {row.min()} .. {row.max()}, outside the "
                         f"{beams} beams")
    return np.where(row > 0, b // beams * beams + row, own)


def _mmha_step(k, x, cache, b: int, step: int, mask):
    """One sequence: q, k, v of x[b] (rope), written at ``step``; returns out [H, D] and the new keys and values."""
    kv_heads, seq, dim = cache.shape[2:]
    heads = x.shape[1] // dim - 2 * kv_heads
    if step >= seq:
        raise ValueError(f"sequence {b} is at step {step}, past cache_kv's {seq} positions")
    qkv = x[b].reshape(-1, dim)
    bias = k.optional("bias")
    if bias is not None:
        qkv = qkv + bias.reshape(-1, dim)
    q, new_k, new_v = qkv[:heads], qkv[heads:heads + kv_heads], qkv[heads + kv_heads:]
    dims = k.attr("rotary_emb_dims")
    if dims > 0:
        table = k.x("rotary_tensor").astype(np.float64).reshape(2, -1, dim)
        cos, sin, neox = table[0, b], table[1, b], k.attr("use_neox_rotary_style")
        q, new_k = rotate(q, cos, sin, neox, dims), rotate(new_k, cos, sin, neox, dims)
    width = 16 // cache.dtype.itemsize
    keys = keys_from_layout(cache[0, b].astype(np.float64), width)
    values = cache[1, b].astype(np.float64)
    offsets = k.optional("beam_cache_offset")
    sources, before = beam_sources(offsets, b, step, offsets.shape[1] if offsets is not None else 1), np.arange(step)
    keys[:, step], values[:, step] = new_k, new_v
    read_keys, read_values, moved = keys.copy(), values.copy(), sources != b
    if moved.any():   # other beams' entries, from the cache as it was before this step's writes
        read_keys[:, before[moved]] = keys_from_layout(cache[0, sources[moved]].astype(np.float64), width)[
            np.arange(moved.sum()), :, before[moved]].swapaxes(0, 1)
        read_values[:, before[moved]] = cache[1, sources[moved], :, before[moved]].astype(np.float64).swapaxes(0, 1)
    shared = np.arange(heads) // (heads // kv_heads)   # query head h reads kv head h / (H / KVH)
    scores = np.einsum("hd,hsd->hs", q, read_keys[shared, :step + 1]) / np.sqrt(dim)
    if mask is not None:
        if step >= mask.shape[-1]:
            raise ValueError(f"sequence {b} is at step {step}, past src_mask's {mask.shape[-1]} columns")
        scores = scores + mask[b, :, 0, :step + 1].astype(np.float64)
    out = softmax_attend(scores, read_values[shared, :step + 1])
    return out, keys_to_layout(keys, width), values


def heads_of(x: np.ndarray, cache: np.ndarray) -> int:
    return x.shape[1] // cache.shape[4] - 2 * cache.shape[2]


@kernel("masked_multihead_attention")
def masked_multihead_attention(k):
    x, cache, mask = k.x("x"), k.x("cache_kv"), k.optional("src_mask")
    offsets = k.optional("beam_cache_offset")
    plain = cache.shape[1] == x.shape[0] and heads_of(x, cache) == cache.shape[2]
    if offsets is not None and np.any(offsets) and not plain:
        raise ValueError("beam_cache_offset moves reads between beams, which Paddle's kernel addresses with x's batch "
                         "and query heads: it needs cache_kv's batch and kv_heads equal to them")
    lengths = k.optional("sequence_lengths")
    heads = heads_of(x, cache)
    out, cache_out = np.zeros((x.shape[0], heads, cache.shape[4])), cache.copy()
    x = dequantized(k, x)
    wide = x.astype(np.float64)
    for b in range(x.shape[0]):
        step = int(lengths.reshape(-1)[b]) if lengths is not None else mask.shape[-1] - 1
        if step < 0:   # the kernel returns before touching this sequence
            continue
        out[b], keys, values = _mmha_step(k, wide, cache, b, step, mask)
        cache_out[0, b], cache_out[1, b] = keys, values
    out = out.reshape(x.shape[0], -1)
    shift = k.optional("out_shift")
    if k.attr("out_scale") > 0:
        out = quantized_out(k, out.astype(x.dtype), shift)
    else:
        if shift is not None:
            out = (out + shift.reshape(-1)) * k.x("out_smooth").reshape(-1)
        out = out.astype(x.dtype)
    results = {"out": out, "cache_kv_out": cache_out}
    return results | ({"beam_cache_offset_out": offsets} if offsets is not None else {})


@kernel("variable_length_memory_efficient_attention")
def variable_length_memory_efficient_attention(k):
    query, key, value, mask = k.x("query"), k.x("key"), k.x("value"), k.optional("mask")
    rows, cols = k.x("seq_lens").reshape(-1), k.x("kv_seq_lens").reshape(-1)
    batch, heads, seq, _ = query.shape
    shared = np.arange(heads) // (heads // key.shape[1])   # query head h reads kv head h / (H / KVH)
    pre_cache, out = k.attr("pre_cache_length"), np.zeros((*query.shape[:3], value.shape[3]))
    for b in range(batch):
        m = int(rows[b])
        n = int(cols[b]) + (pre_cache if m > 0 else 0)
        if m > seq or n > key.shape[2] or min(m, n) < 0:
            raise ValueError(f"sequence {b} has {m} query rows and {n} keys (kv_seq_lens + pre_cache_length), "
                             f"outside query's {seq} and key's {key.shape[2]}")
        if m == 0 or n == 0:
            continue
        scores = query[b, :, :m].astype(np.float64) @ np.swapaxes(key[b, shared, :n], 1, 2) * k.attr("scale")
        if mask is not None:
            if m > mask.shape[2] or n > mask.shape[3]:
                raise ValueError(f"sequence {b} needs a mask of {m} x {n}, mask is {list(mask.shape)}")
            scores = scores + mask[b, :, :m, :n].astype(np.float64)
        if k.attr("causal"):
            scores = np.where(np.arange(n)[None, :] <= np.arange(m)[:, None], scores, -np.inf)
        p = np.exp(scores - scores.max(axis=-1, keepdims=True))
        out[b, :, :m] = p @ value[b, shared, :n].astype(np.float64) / p.sum(axis=-1, keepdims=True)
    return {"out": out.astype(query.dtype)}
