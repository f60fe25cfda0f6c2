"""Kernels of gradc.ops.fused_rope: fused_rotary_position_embedding and its grad (the rotation's transpose), in
float64 inside; the sin / cos Paddle's kernel computes itself (no tables given) in float32, as it does."""

from __future__ import annotations

import numpy as np

from . import kernel

PAIRS = (("q", "out_q"), ("k", "out_k"), ("v", "out_v"))


def _rotated(x: np.ndarray, neox: bool) -> np.ndarray:
    """rot(x) over the last dim: (-x_{2j+1}, x_{2j}) per pair, or (-x_{i+d/2}, x_{i-d/2}) per half."""
    out = np.empty_like(x)
    if neox:
        out[..., 0::2], out[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    else:
        half = x.shape[-1] // 2
        out[..., :half], out[..., half:] = -x[..., half:], x[..., :half]
    return out


def _tables(k, batch: int, seq: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos [batch, seq, 1, d] in float64, at each (b, s)'s position."""
    ids = k.optional("position_ids")
    positions = np.broadcast_to(np.arange(seq), (batch, seq)) if ids is None else ids.astype(np.int64)
    sin, cos = k.optional("sin"), k.optional("cos")
    if sin is not None and cos is not None:
        rows = sin.reshape(-1, d).shape[0]
        if positions.size and (positions.min() < 0 or positions.max() >= rows):
            raise ValueError(f"position_ids hold positions {positions.min()}..{positions.max()}, outside the "
                             f"{rows} rows of sin and cos")
        return (sin.reshape(-1, d).astype(np.float64)[positions][:, :, None],
                cos.reshape(-1, d).astype(np.float64)[positions][:, :, None])
    exponent = (np.arange(d) // 2 * 2).astype(np.float32) / np.float32(d)
    inverse = np.float32(1) / np.power(np.float32(k.attr("rotary_emb_base")), exponent)
    angle = (positions.astype(np.float32)[..., None] * inverse).astype(np.float64)   # float32 like the kernel's
    return np.sin(angle)[:, :, None], np.cos(angle)[:, :, None]


def _apply(k, slots, grad: bool) -> dict:
    """Each present (input slot, output slot): out = x cos + rot(x) sin, or its transpose dx = dout cos - rot(dout
    sin), in the [batch, seq, heads, d] layout (time_major swaps the first two dims in and out)."""
    time_major, neox = k.attr("time_major"), k.attr("use_neox_rotary_style")
    present = [(src, dst) for src, dst in slots if k.optional(src) is not None and k.wants(dst)]
    if not present:
        return {}
    first = k.x(present[0][0])
    batch, seq = (first.shape[1], first.shape[0]) if time_major else first.shape[:2]
    sin, cos = _tables(k, batch, seq, first.shape[3])
    results = {}
    for src, dst in present:
        x = k.x(src)
        x64 = (x.swapaxes(0, 1) if time_major else x).astype(np.float64)
        out = x64 * cos - _rotated(x64 * sin, neox) if grad else x64 * cos + _rotated(x64, neox) * sin
        results[dst] = (out.swapaxes(0, 1) if time_major else out).astype(x.dtype)
    return results


@kernel("fused_rotary_position_embedding")
def fused_rotary_position_embedding(k):
    return _apply(k, PAIRS, grad=False)


@kernel("fused_rotary_position_embedding_grad")
def fused_rotary_position_embedding_grad(k):
    return _apply(k, [(f"{out}@GRAD", f"{src}@GRAD") for src, out in PAIRS], grad=True)
