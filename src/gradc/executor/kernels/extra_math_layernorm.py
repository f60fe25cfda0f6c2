"""Kernel of gradc.ops.extra_math_layernorm: fused_bias_residual_layernorm's non-quantized path, in float64 inside
(its grad is written with layer_norm and layer_norm_grad, which have kernels of their own)."""

from __future__ import annotations

import numpy as np

from . import kernel


@kernel("fused_bias_residual_layernorm")
def fused_bias_residual_layernorm(k):
    x, residual, bias = k.x("x"), k.optional("residual"), k.optional("bias")
    weight, norm_bias = k.optional("norm_weight"), k.optional("norm_bias")
    axis = k.attr("begin_norm_axis")
    if k.attr("quant_scale") > 0:
        raise ValueError(f"quant_scale={k.attr('quant_scale')}: the quantized path (an int8 out) is not supported")
    if x.ndim == 0 or not 0 <= axis <= x.ndim:
        raise ValueError(f"begin_norm_axis {axis} must be in [0, {x.ndim}] for x of shape {list(x.shape)}")
    normalised = weight is not None or norm_bias is not None
    h = x.astype(np.float64)
    if residual is not None:
        h = h + k.attr("residual_alpha") * residual.astype(np.float64)
    if bias is not None and (residual is not None or not normalised):   # normalising, Paddle adds it only so
        h = h + bias.reshape(x.shape[axis:])
    cols = int(np.prod(x.shape[axis:]))
    flat = h.reshape(int(np.prod(x.shape[:axis])), cols)   # -1 fails on 0 rows
    mean = flat.sum(1, keepdims=True) / max(cols, 1)
    centred = flat - mean
    inverse = 1 / np.sqrt((centred * centred).sum(1, keepdims=True) / max(cols, 1) + k.attr("epsilon"))

    def out():
        if not normalised:
            return h.astype(x.dtype)
        y = centred * inverse
        y = y if weight is None else y * weight.reshape(-1)
        y = y if norm_bias is None else y + norm_bias.reshape(-1)
        return y.reshape(x.shape).astype(x.dtype)

    return k.grads({"out": out, "residual_out": lambda: h.astype(x.dtype),
                    "mean": lambda: mean.reshape(-1).astype(np.float32),
                    "variance": lambda: inverse.reshape(-1).astype(np.float32)})
