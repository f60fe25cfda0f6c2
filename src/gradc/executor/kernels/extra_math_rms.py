"""Kernels of gradc.ops.extra_math_rms: fused_rms_norm_quant's non-quantized path and its grad, in float64 inside."""

from __future__ import annotations

import numpy as np

from . import kernel


def _normalised(k):
    """(h, inv_var, the rows x cols view of h) with h = x + residual + bias in float64; inv_var [rows, 1]. Paddle's
    kernels add bias only along with a residual: without one they ignore it."""
    x, residual = k.x("x"), k.optional("residual")
    axis = k.attr("begin_norm_axis") % x.ndim
    h = x.astype(np.float64)
    if residual is not None:
        h = h + residual
        bias = k.optional("bias")
        h = h if bias is None else h + bias.reshape(x.shape[axis:])
    flat = h.reshape(int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))   # -1 fails on 0 rows
    inverse = 1 / np.sqrt(np.mean(flat * flat, axis=1, keepdims=True) + k.attr("epsilon"))
    return h, inverse, flat


@kernel("fused_rms_norm_quant")
def fused_rms_norm_quant(k):
    x = k.x("x")
    h, inverse, flat = _normalised(k)
    out = flat * inverse * k.x("norm_weight").reshape(-1)
    norm_bias = k.optional("norm_bias")
    if norm_bias is not None:
        out = out + norm_bias.reshape(-1)
    axis = k.attr("begin_norm_axis") % x.ndim
    return k.grads({"out": lambda: out.reshape(x.shape).astype(x.dtype), "residual_out": lambda: h.astype(x.dtype),
                    "inv_var": lambda: inverse.reshape(x.shape[:axis]).astype(np.float32)})


@kernel("fused_rms_norm_quant_grad", shape_only=("inv_var",))
def fused_rms_norm_quant_grad(k):
    x, weight, dout = k.x("x"), k.x("norm_weight"), k.x("out@GRAD")
    _, inverse, flat = _normalised(k)
    dy = dout.reshape(flat.shape).astype(np.float64)
    xhat = flat * inverse
    scaled = dy * weight.reshape(-1)
    dh = inverse * (scaled - xhat * np.mean(scaled * xhat, axis=1, keepdims=True))
    return k.grads({"x@GRAD": lambda: dh.reshape(x.shape).astype(x.dtype),
                    "norm_weight@GRAD": lambda: (dy * xhat).sum(0).reshape(weight.shape).astype(weight.dtype),
                    "norm_bias@GRAD": lambda: dy.sum(0).reshape(k.x("norm_bias").shape).astype(weight.dtype)})
