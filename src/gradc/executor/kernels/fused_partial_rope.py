"""Kernels of gradc.ops.fused_partial_rope: the rotation of each head's last pe_dim values and its transpose."""

from __future__ import annotations

import numpy as np

from . import kernel


def _tables(k, x) -> tuple[np.ndarray, np.ndarray, int]:
    cos, sin = (k.x(name).astype(np.float64)[0, :, 0][None, :, None] for name in ("cos", "sin"))
    if cos.shape[1] != x.shape[1]:
        raise ValueError(f"cos and sin hold {cos.shape[1]} positions, x {x.shape[1]}")
    return cos, sin, x.shape[-1] - cos.shape[-1]


@kernel("fused_partial_rope")
def fused_partial_rope(k):
    x = k.x("x")
    cos, sin, nope = _tables(k, x)
    pe = x[..., nope:].astype(np.float64)
    half = pe.shape[-1] // 2
    b = np.concatenate([pe[..., 0::2], pe[..., 1::2]], -1)
    turned = np.concatenate([-b[..., half:], b[..., :half]], -1)
    return {"out": np.concatenate([x[..., :nope], (b * cos + turned * sin).astype(x.dtype)], -1)}


@kernel("fused_partial_rope_grad")
def fused_partial_rope_grad(k):
    dout = k.x("out@GRAD")
    cos, sin, nope = _tables(k, dout)
    g = dout[..., nope:].astype(np.float64)
    half = g.shape[-1] // 2
    # out = b cos + rotate_half(b) sin, so db = g cos + rotate_half^T(g sin), rotate_half^T(v) = [v[h:], -v[:h]]
    gs = g * sin
    db = g * cos + np.concatenate([gs[..., half:], -gs[..., :half]], -1)
    dpe = np.empty_like(db)
    dpe[..., 0::2], dpe[..., 1::2] = db[..., :half], db[..., half:]
    return k.grads({"x@GRAD": lambda: np.concatenate([dout[..., :nope], dpe.astype(dout.dtype)], -1)})
