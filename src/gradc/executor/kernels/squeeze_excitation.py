"""Kernel of gradc.ops.squeeze_excitation: the block in float64 with the int16 weights dequantized."""

from __future__ import annotations

import numpy as np

from ...ops.squeeze_excitation import MAX_SLOTS, XPU_ACTIVATIONS
from . import kernel
from .activation import erf, sigmoid

INT16_MAX = 32767
ACTIVATE = {
    "linear": lambda x, a: x, "relu": lambda x, a: np.maximum(x, 0), "sigmoid": lambda x, a: sigmoid(x),
    "tanh": lambda x, a: np.tanh(x), "gelu": lambda x, a: 0.5 * x * (1 + erf(x / np.sqrt(2))),
    "leaky_relu": lambda x, a: np.where(x > 0, x, a * x),
    "hard_swish": lambda x, a: x * np.clip(x + 3, 0, 6) / 6, "relu6": lambda x, a: np.clip(x, 0, 6),
}


@kernel("squeeze_excitation_block")
def squeeze_excitation_block(k):
    x, (ratio, channels) = k.x("x"), k.attr("filter_dims")
    hidden = channels // ratio
    weights, maxima = k.x("filter").astype(np.float64), k.x("filter_max").astype(np.float64)
    if x.ndim != 4 or x.shape[1] != channels or weights.size != 2 * channels * hidden or maxima.size < 2 * MAX_SLOTS:
        raise ValueError(f"needs x [N, {channels}, H, W], a filter of {2 * channels * hidden} and a filter_max of "
                         f"{2 * MAX_SLOTS} values, got {list(x.shape)}, {weights.size} and {maxima.size}")
    w1 = weights[:channels * hidden].reshape(channels, hidden) * maxima[0] / INT16_MAX
    w2 = weights[channels * hidden:].reshape(hidden, channels) * maxima[MAX_SLOTS] / INT16_MAX
    bias = k.optional("bias")
    b1, b2 = (0.0, 0.0) if bias is None else (bias[:hidden].astype(np.float64), bias[hidden:].astype(np.float64))
    acts = [(ACTIVATE[XPU_ACTIVATIONS[code]], param) for code, param in zip(k.attr("act_type"), k.attr("act_param"))]
    wide = x.astype(np.float64)
    h = acts[0][0](wide.mean(axis=(2, 3)) @ w1 + b1, acts[0][1])
    s = acts[1][0](h @ w2 + b2, acts[1][1])
    out = wide * s[:, :, None, None]
    if (branch := k.optional("branch")) is not None:
        out = out + branch
    return {"out": acts[2][0](out, acts[2][1]).astype(x.dtype)}
