"""Kernels of gradc.ops.flash_attention_v3: FlashAttention-3's flash_attn_v3, flash_attn_v3_varlen,
flashmask_attention_v2 and their grads, through gradc.executor.kernels.flash_attention's attend / attend_grad (float64
inside, cast once to q's dtype) with FlashAttention-3's bottom-right window and softcap."""

from __future__ import annotations

import numpy as np

from . import kernel
from .flash_attention import attend, attend_grad, f64, flashmask_keep


def window_keep(rows: int, cols: int, left: int, right: int, causal: bool) -> np.ndarray | None:
    """Key j of row i kept when i + cols - rows - left <= j <= i + cols - rows + right (negative: unbounded; causal
    sets right 0): FlashAttention-3's mask, aligned bottom-right. None: every key."""
    right = 0 if causal else right
    if left < 0 and right < 0:
        return None
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None] - (cols - rows)
    keep = np.ones((rows, cols), bool)
    if right >= 0:
        keep &= offset <= right
    if left >= 0:
        keep &= offset >= -left
    return keep


def _setting(k, rows: int, cols: int, causal_attr: str = "is_causal") -> dict:
    """attend's keyword arguments of a v3 op over rows x cols (the varlen ops name their causal flag "causal")."""
    keep = window_keep(rows, cols, k.attr("window_size_left"), k.attr("window_size_right"), k.attr(causal_attr))
    return {"keep": keep, "softcap": k.attr("softcap")}


def _grads(k, grads) -> dict:
    return k.grads({f"{slot}@GRAD": (lambda g=g, slot=slot: g.astype(k.x(slot).dtype))
                    for slot, g in zip(("q", "k", "v"), grads)})


@kernel("flash_attn_v3")
def flash_attn_v3(k):
    q = k.x("q")
    result = attend(*(f64(k.x(slot)) for slot in ("q", "k", "v")), k.attr("softmax_scale"),
                    **_setting(k, q.shape[1], k.x("k").shape[1]))
    return k.grads({"out": lambda: result["out"].astype(q.dtype),
                    "softmax_lse": lambda: result["lse"].astype(np.float32)})


@kernel("flash_attn_v3_grad")
def flash_attn_v3_grad(k):
    q, key, value, dout = (f64(k.x(slot)) for slot in ("q", "k", "v", "out@GRAD"))
    return _grads(k, attend_grad(q, key, value, k.attr("softmax_scale"), dout,
                                 **_setting(k, q.shape[1], key.shape[1])))


def _sequences(k, total_q: int, total_k: int) -> list[tuple[slice, slice]]:
    """Each sequence's q rows and k rows: from cu_seqlens, as long as seqused says when given."""
    starts_q, starts_k = (np.asarray(k.x(slot), np.int64).reshape(-1) for slot in ("cu_seqlens_q", "cu_seqlens_k"))
    if len(starts_q) != len(starts_k) or np.any(np.diff(starts_q) < 0) or np.any(np.diff(starts_k) < 0):
        raise ValueError(f"cu_seqlens_q {starts_q.tolist()} and cu_seqlens_k {starts_k.tolist()} must be "
                         "non-decreasing offsets of as many sequences")
    lengths = []
    for slot, starts in (("seqused_q", starts_q), ("seqused_k", starts_k)):
        used = k.optional(slot)
        lengths.append(np.diff(starts) if used is None else np.asarray(used, np.int64).reshape(-1))
    result = []
    for s, (rows, cols) in enumerate(zip(*lengths)):
        if rows < 0 or cols < 0 or starts_q[s] + rows > total_q or starts_k[s] + cols > total_k:
            raise ValueError(f"sequence {s} ({rows} query rows from {starts_q[s]}, {cols} key rows from "
                             f"{starts_k[s]}) reaches past q's {total_q} or k's {total_k} rows")
        if rows > k.attr("max_seqlen_q") or cols > k.attr("max_seqlen_k"):
            raise ValueError(f"sequence {s} has {rows} query and {cols} key rows, past max_seqlen_q="
                             f"{k.attr('max_seqlen_q')} or max_seqlen_k={k.attr('max_seqlen_k')}")
        result.append((slice(starts_q[s], starts_q[s] + rows), slice(starts_k[s], starts_k[s] + cols)))
    return result


@kernel("flash_attn_v3_varlen")
def flash_attn_v3_varlen(k):
    q, key, value = (f64(k.x(slot)) for slot in ("q", "k", "v"))
    out, lse = np.zeros((*q.shape[:2], value.shape[2])), np.zeros((q.shape[1], q.shape[0]))
    for rows, cols in _sequences(k, len(q), len(key)):
        if cols.stop == cols.start:   # no key: the kernel leaves the rows 0
            continue
        setting = _setting(k, rows.stop - rows.start, cols.stop - cols.start, "causal")
        result = attend(q[None, rows], key[None, cols], value[None, cols], k.attr("softmax_scale"), **setting)
        out[rows], lse[:, rows] = result["out"][0], result["lse"][0]
    return k.grads({"out": lambda: out.astype(k.x("q").dtype), "softmax_lse": lambda: lse.astype(np.float32)})


@kernel("flash_attn_v3_varlen_grad")
def flash_attn_v3_varlen_grad(k):
    q, key, value, dout = (f64(k.x(slot)) for slot in ("q", "k", "v", "out@GRAD"))
    grads = [np.zeros_like(x) for x in (q, key, value)]
    for rows, cols in _sequences(k, len(q), len(key)):
        if cols.stop == cols.start:
            continue
        setting = _setting(k, rows.stop - rows.start, cols.stop - cols.start, "causal")
        dq, dk, dv = attend_grad(q[None, rows], key[None, cols], value[None, cols], k.attr("softmax_scale"),
                                 dout[None, rows], **setting)
        grads[0][rows], grads[1][cols], grads[2][cols] = dq[0], dk[0], dv[0]
    return _grads(k, grads)


def _flashmask_keep(k) -> np.ndarray:
    """startend_row_indices' keys (causal bottom-right) and block_mask's 128 x 128 tiles, [b, h, sq, sk]."""
    q, bounds = k.x("q"), np.asarray(k.x("startend_row_indices"))
    rows, heads, cols = q.shape[1], q.shape[2], k.x("k").shape[1]
    keep = flashmask_keep(bounds, rows, heads, k.attr("is_causal"), cols - rows)
    tiles = k.optional("block_mask")
    if tiles is not None:
        tiles = np.asarray(tiles) != 0
        tiles = np.repeat(tiles, heads // tiles.shape[1], axis=1) if tiles.shape[1] > 1 else tiles
        keep = keep & np.repeat(np.repeat(tiles, 128, axis=2), 128, axis=3)[:, :, :rows, :cols]
    return keep


@kernel("flashmask_attention_v2")
def flashmask_attention_v2(k):
    q = k.x("q")
    result = attend(*(f64(k.x(slot)) for slot in ("q", "k", "v")), k.attr("softmax_scale"), _flashmask_keep(k))
    return k.grads({"out": lambda: result["out"].astype(q.dtype),
                    "softmax_lse": lambda: result["lse"].astype(np.float32)})


@kernel("flashmask_attention_v2_grad")
def flashmask_attention_v2_grad(k):
    q, key, value, dout = (f64(k.x(slot)) for slot in ("q", "k", "v", "out@GRAD"))
    return _grads(k, attend_grad(q, key, value, k.attr("softmax_scale"), dout, _flashmask_keep(k)))
