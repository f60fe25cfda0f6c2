"""Kernels of gradc.ops.flash_attention: flash_attn, flash_attn_unpadded, flashmask_attention and their grads, in
float64 inside, cast once to q's dtype. A sequence's attention is ``attend`` over [b, s, heads, d] arrays; the
unpadded op runs it once per sequence."""

from __future__ import annotations

import numpy as np

from ...ops.flash_attention import rounded
from . import kernel


def f64(array) -> np.ndarray | None:
    return None if array is None else np.asarray(array, np.float64)


def by_query_head(x: np.ndarray, heads: int) -> np.ndarray:
    """k or v [b, s, hk, d] spread to the query heads: head i reads kv head i / (heads / hk)."""
    return np.repeat(x, heads // x.shape[2], axis=2)


def to_kv_heads(grad: np.ndarray, kv_heads: int) -> np.ndarray:
    """The adjoint of by_query_head: each kv head sums the grads of its query heads."""
    b, s, heads, d = grad.shape
    return grad.reshape(b, s, kv_heads, heads // kv_heads, d).sum(3)


def attend(q, k, v, scale: float, keep=None, bias=None, softcap: float = 0.0) -> dict:
    """softmax(q k^T scale + bias, over the keys ``keep`` allows) v for q [b, sq, h, d], k / v [b, sk, hk, d]:
    the probabilities p [b, h, sq, sk], out [b, sq, h, dv] and each row's log sum exp [b, h, sq] (inf for a row
    with no key left, whose p and out are 0). softcap > 0 (FlashAttention-3): scores softcap tanh(s / softcap)."""
    heads = q.shape[2]
    scores = np.einsum("bqhd,bkhd->bhqk", q, by_query_head(k, heads)) * scale
    if softcap > 0:
        scores = softcap * np.tanh(scores / softcap)
    if bias is not None:
        scores = scores + bias
    if keep is not None:
        scores = np.where(keep, scores, -np.inf)
    top = scores.max(-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(scores - top)
    total = e.sum(-1, keepdims=True)
    p = e / np.where(total == 0, 1.0, total)
    with np.errstate(divide="ignore"):
        lse = np.where(total == 0, np.inf, top + np.log(total))[..., 0]
    return {"p": p, "out": np.einsum("bhqk,bkhd->bqhd", p, by_query_head(v, heads)), "lse": lse}


def attend_grad(q, k, v, scale: float, dout, keep=None, bias=None, softcap: float = 0.0) -> tuple:
    """(dq, dk, dv) of attend's out at dout."""
    heads, kv_heads = q.shape[2], k.shape[2]
    p = attend(q, k, v, scale, keep, bias, softcap)["p"]
    dp = np.einsum("bqhd,bkhd->bhqk", dout, by_query_head(v, heads))
    dscores = p * (dp - (dp * p).sum(-1, keepdims=True)) * scale
    if softcap > 0:   # the derivative of softcap tanh(s / softcap)
        raw = np.einsum("bqhd,bkhd->bhqk", q, by_query_head(k, heads)) * scale
        dscores = dscores * (1 - np.tanh(raw / softcap) ** 2)
    dq = np.einsum("bhqk,bkhd->bqhd", dscores, by_query_head(k, heads))
    dk = np.einsum("bhqk,bqhd->bkhd", dscores, q)
    dv = np.einsum("bhqk,bqhd->bkhd", p, dout)
    return dq, to_kv_heads(dk, kv_heads), to_kv_heads(dv, kv_heads)


def causal_keep(rows: int, cols: int, shift: int = 0) -> np.ndarray:
    """The fork's top-left causal mask: query row i keeps key j <= i (also when the lengths differ); FlashAttention-3
    keeps j <= i + shift with shift sk - sq (bottom-right)."""
    return np.arange(cols)[None, :] <= np.arange(rows)[:, None] + shift


def _mask_bias(mask) -> np.ndarray | None:
    """attn_mask [..., 1 or h, sq, sk] with its leading dims flattened (the kernel's 4-d view)."""
    if mask is None:
        return None
    mask = f64(mask)
    return mask.reshape(-1, *mask.shape[-3:])


def flashmask_keep(bounds: np.ndarray, rows: int, heads: int, causal: bool, shift: int = 0) -> np.ndarray:
    """The keys each row keeps under startend_row_indices [b, 1 | h | hk, sk, n] (column j's masked row ranges)."""
    bounds = np.repeat(bounds, heads // bounds.shape[1], axis=1) if bounds.shape[1] > 1 else bounds
    row = np.arange(rows)[:, None]
    column = [bounds[..., i][:, :, None, :].astype(np.int64) for i in range(bounds.shape[-1])]
    if causal:
        masked = (row >= column[0]) & (row < column[1]) if len(column) == 2 else row >= column[0]
        return ~masked & causal_keep(rows, bounds.shape[2], shift)
    if len(column) == 2:
        return ~((row >= column[0]) | (row < column[1]))
    return ~(((row >= column[0]) & (row < column[1])) | ((row >= column[2]) & (row < column[3])))


def _scale(q: np.ndarray) -> float:
    """1 / sqrt(head_dim) as the kernel's float; float64 (no CUDA kernel) keeps it exact."""
    exact = 1.0 / np.sqrt(q.shape[-1])
    return exact if q.dtype == np.float64 else float(np.float32(exact))


def _padded_setting(k) -> tuple:
    """(scale, keep, bias) of flash_attn / flashmask_attention."""
    q, key = k.x("q"), k.x("k")
    rows, cols, heads = q.shape[1], key.shape[1], q.shape[2]
    scale = _scale(q)
    if k.op.type.startswith("flashmask"):
        return scale, flashmask_keep(np.asarray(k.x("startend_row_indices")), rows, heads, k.attr("causal")), None
    keep = causal_keep(rows, cols) if k.attr("causal") else None
    return scale, keep, _mask_bias(k.optional("attn_mask"))


def _state(k, lse: np.ndarray, rows: int, cols: int, batch: int, dtype) -> dict:
    """softmax (zeros of q's dtype: never returned), softmax_lse packed as the kernel writes it, seed_offset."""
    heads = lse.shape[1]
    packed = np.zeros(batch * heads * rounded(rows), np.float32)
    packed[:lse.size] = lse.ravel()
    fixed = k.optional("fixed_seed_offset")
    seed = np.zeros(2, np.int64) if fixed is None else np.asarray(fixed, np.int64).reshape(-1)[:2]
    return {"softmax": lambda: np.zeros((batch, heads, rounded(rows), rounded(cols)), dtype),
            "softmax_lse": lambda: packed.reshape(batch, heads, rounded(rows)), "seed_offset": lambda: seed}


@kernel("flash_attn", "flashmask_attention")
def flash_attn(k):
    q = k.x("q")
    scale, keep, bias = _padded_setting(k)
    result = attend(f64(q), f64(k.x("k")), f64(k.x("v")), scale, keep, bias)
    state = _state(k, result["lse"], q.shape[1], k.x("k").shape[1], q.shape[0], q.dtype)
    return k.grads({"out": lambda: result["out"].astype(q.dtype), **state})


@kernel("flash_attn_grad", "flashmask_attention_grad")
def flash_attn_grad(k):
    scale, keep, bias = _padded_setting(k)
    inputs = [k.x(slot) for slot in ("q", "k", "v")]
    grads = attend_grad(*map(f64, inputs), scale, f64(k.x("out@GRAD")), keep, bias)
    return k.grads({f"{slot}@GRAD": (lambda g=g, x=x: g.astype(x.dtype))
                    for slot, g, x in zip(("q", "k", "v"), grads, inputs)})


def _sequences(k, total_q: int, total_k: int, padded: bool) -> list[tuple[slice, slice, np.ndarray | None,
                                                                          np.ndarray | None]]:
    """Per sequence: its q rows, k rows, causal keep and mask bias [1, 1 | h, sq, sk]. Rows from cu_seqlens, or
    (padded: the varlen_padded layout) sequence s from row s max_seqlen_q of q and s max_seqlen_k of k."""
    starts_q, starts_k = (np.asarray(k.x(slot), np.int64).reshape(-1) for slot in ("cu_seqlens_q", "cu_seqlens_k"))
    if len(starts_q) != len(starts_k) or np.any(np.diff(starts_q) < 0) or np.any(np.diff(starts_k) < 0):
        raise ValueError(f"cu_seqlens_q {starts_q.tolist()} and cu_seqlens_k {starts_k.tolist()} must be "
                         "non-decreasing offsets of as many sequences")
    longest = (k.attr("max_seqlen_q"), k.attr("max_seqlen_k"))
    first_q, first_k = (np.arange(len(starts_q)) * n if padded else starts for n, starts in zip(longest,
                                                                                                (starts_q, starts_k)))
    lengths_q, lengths_k = np.diff(starts_q), np.diff(starts_k)
    if len(lengths_q) and (max(first_q[:-1] + lengths_q) > total_q or max(first_k[:-1] + lengths_k) > total_k):
        raise ValueError(f"cu_seqlens_q {starts_q.tolist()} and cu_seqlens_k {starts_k.tolist()} reach past q's "
                         f"{total_q} or k's {total_k} rows" + (" (varlen_padded: sequence s at s max_seqlen)"
                                                                if padded else ""))
    mask = _mask_bias(k.optional("attn_mask"))
    result = []
    for s, (rows, cols) in enumerate(zip(lengths_q, lengths_k)):
        if rows > longest[0] or cols > longest[1]:
            raise ValueError(f"sequence {s} has {rows} query and {cols} key rows, past max_seqlen_q={longest[0]} "
                             f"or max_seqlen_k={longest[1]}")
        bias = None if mask is None else mask[s % mask.shape[0]][None, :, :rows, :cols]
        keep = causal_keep(rows, cols) if k.attr("causal") else None
        result.append((slice(first_q[s], first_q[s] + rows), slice(first_k[s], first_k[s] + cols), keep, bias))
    return result


def unpadded_attend(k, q, key, value, dtype, padded: bool = False) -> tuple[np.ndarray, dict]:
    """flash_attn_unpadded of float64 q [total_q, h, d], k / v [total_k, hk, d]: (out, the state outputs, softmax
    of the input's dtype)."""
    heads, rows = q.shape[1], k.attr("max_seqlen_q")
    out, sequences = np.zeros((*q.shape[:2], value.shape[2])), _sequences(k, len(q), len(key), padded)
    lse = np.zeros((len(sequences), heads, rows))
    for s, (query_rows, key_rows, keep, bias) in enumerate(sequences):
        if key_rows.stop == key_rows.start:   # the kernel returns at once for a sequence with no key
            continue
        result = attend(q[None, query_rows], key[None, key_rows], value[None, key_rows], k.attr("scale"), keep, bias)
        out[query_rows] = result["out"][0]
        lse[s, :, :result["lse"].shape[2]] = result["lse"][0]
    return out, _state(k, lse, rows, k.attr("max_seqlen_k"), len(sequences), dtype)


def unpadded_grads(k, q, key, value, dout, padded: bool = False) -> list[np.ndarray]:
    """[dq, dk, dv] of unpadded_attend's out at dout (0 on rows no sequence reads)."""
    grads = [np.zeros_like(x) for x in (q, key, value)]
    for query_rows, key_rows, keep, bias in _sequences(k, len(q), len(key), padded):
        if key_rows.stop == key_rows.start:
            continue
        dq, dk, dv = attend_grad(q[None, query_rows], key[None, key_rows], value[None, key_rows], k.attr("scale"),
                                 dout[None, query_rows], keep, bias)
        grads[0][query_rows], grads[1][key_rows], grads[2][key_rows] = dq[0], dk[0], dv[0]
    return grads


@kernel("flash_attn_unpadded")
def flash_attn_unpadded(k):
    out, state = unpadded_attend(k, *(f64(k.x(slot)) for slot in ("q", "k", "v")), k.x("q").dtype)
    return k.grads({"out": lambda: out.astype(k.x("q").dtype), **state})


@kernel("flash_attn_unpadded_grad")
def flash_attn_unpadded_grad(k):
    inputs = [k.x(slot) for slot in ("q", "k", "v")]
    grads = unpadded_grads(k, *map(f64, inputs), f64(k.x("out@GRAD")))
    return k.grads({f"{slot}@GRAD": (lambda g=g, x=x: g.astype(x.dtype))
                    for slot, g, x in zip(("q", "k", "v"), grads, inputs)})


def _unpacked(qkv: np.ndarray) -> tuple:
    """q [b, s, h, d], k, v [b, s, hk, d] of qkv [b, s, h / hk + 2, hk, d] (the kernel's flattened slices)."""
    b, s, groups, kv_heads, d = qkv.shape
    return qkv[:, :, :-2].reshape(b, s, (groups - 2) * kv_heads, d), qkv[:, :, -2], qkv[:, :, -1]


def _packed_setting(k) -> tuple:
    """(q, k, v, scale, keep, bias) of flash_attn_qkvpacked and its grad."""
    qkv = k.x("qkv")
    q, key, value = _unpacked(f64(qkv))
    keep = causal_keep(q.shape[1], q.shape[1]) if k.attr("causal") else None
    return q, key, value, _scale(qkv), keep, _mask_bias(k.optional("attn_mask"))


@kernel("flash_attn_qkvpacked")
def flash_attn_qkvpacked(k):
    qkv = k.x("qkv")
    result = attend(*_packed_setting(k))
    state = _state(k, result["lse"], qkv.shape[1], qkv.shape[1], qkv.shape[0], qkv.dtype)
    return k.grads({"out": lambda: result["out"].astype(qkv.dtype), **state})


@kernel("flash_attn_qkvpacked_grad")
def flash_attn_qkvpacked_grad(k):
    qkv = k.x("qkv")
    q, key, value, scale, keep, bias = _packed_setting(k)
    dq, dk, dv = attend_grad(q, key, value, scale, f64(k.x("out@GRAD")), keep, bias)
    grad = np.concatenate([dq.reshape(*qkv.shape[:2], -1, *qkv.shape[3:]), dk[:, :, None], dv[:, :, None]], axis=2)
    return k.grads({"qkv@GRAD": lambda: grad.astype(qkv.dtype)})


@kernel("calc_reduced_attn_scores")
def calc_reduced_attn_scores(k):
    """Each key's probabilities summed over the query rows, every row against every key, with the row's lse as
    flash_attn packed it (a row of lse inf adds 0)."""
    q, key = f64(k.x("q")), f64(k.x("k"))
    b, rows, heads, _ = q.shape
    lse = np.asarray(k.x("softmax_lse"), np.float64).reshape(-1)[:b * heads * rows].reshape(b, heads, rows, 1)
    scores = np.einsum("bqhd,bkhd->bhqk", q, by_query_head(key, heads)) * _scale(k.x("q"))
    with np.errstate(over="ignore"):
        return {"reduced_scores": np.exp(scores - lse).sum(2, keepdims=True).astype(np.float32)}


def _mea_setting(k) -> tuple:
    """(query, key, value, scale, keep, bias) of memory_efficient_attention in float64; scale < 0: 1 / sqrt(d)."""
    query = k.x("query")
    scale = k.attr("scale")
    if scale < 0:
        scale = _scale(query)
    elif query.dtype != np.float64:
        scale = float(np.float32(scale))
    rows, cols = query.shape[1], k.x("key").shape[1]
    keep = causal_keep(rows, cols) if k.attr("causal") else None
    return (*(f64(k.x(slot)) for slot in ("query", "key", "value")), scale, keep, f64(k.optional("bias")))


@kernel("memory_efficient_attention")
def memory_efficient_attention(k):
    query = k.x("query")
    result = attend(*_mea_setting(k))
    b, rows, heads, _ = query.shape
    lse = np.full((b, heads, 0 if k.attr("is_test") else -(-rows // 32) * 32), np.inf)   # inf: the padding rows
    if lse.shape[2]:
        lse[..., :rows] = result["lse"]
    return k.grads({"output": lambda: result["out"].astype(query.dtype),
                    "logsumexp": lambda: lse.astype(np.float32), "seed_and_offset": lambda: np.zeros(2, np.int64)})


@kernel("memory_efficient_attention_grad")
def memory_efficient_attention_grad(k):
    """(dq, dk, dv) as attend_grad; the bias's grad is the scores' grad, summed over the dims it broadcasts."""
    q, key, value, scale, keep, bias = _mea_setting(k)
    dout = f64(k.x("output@GRAD"))
    grads = dict(zip(("query", "key", "value"), attend_grad(q, key, value, scale, dout, keep, bias)))
    if bias is not None:
        p = attend(q, key, value, scale, keep, bias)["p"]
        dp = np.einsum("bqhd,bkhd->bhqk", dout, value)
        dscores = p * (dp - (dp * p).sum(-1, keepdims=True))
        grads["bias"] = dscores.sum(tuple(i for i in (0, 1) if bias.shape[i] == 1), keepdims=True)
    dtype = k.x("query").dtype
    return k.grads({f"{slot}@GRAD": (lambda g=g: g.astype(dtype)) for slot, g in grads.items()})
