"""Kernels of gradc.ops.fused_llm: fused_bias_act (bias, then gelu / relu / geglu / swiglu, then shift and smooth),
in float64 inside."""

from __future__ import annotations

import numpy as np

from . import kernel
from .activation import _gelu

ACTIVATE = {"gelu": lambda h: _gelu(h, False), "geglu": lambda h: _gelu(h, False), "relu": lambda h: np.maximum(h, 0),
            "swiglu": lambda h: h * 0.5 * (1 + np.tanh(h / 2))}   # x sigmoid(x), no overflow


@kernel("fused_bias_act")
def fused_bias_act(k):
    x, bias, method = k.x("x"), k.optional("bias"), k.attr("act_method")
    h = x.astype(np.float64) if bias is None else x.astype(np.float64) + bias
    if method in ("geglu", "swiglu"):
        half = h.shape[-1] // 2
        out = ACTIVATE[method](h[..., :half]) * h[..., half:]
    else:
        out = ACTIVATE[method](h)
    shift = k.optional("shift")
    if shift is not None:
        out = (out + shift) * k.x("smooth")
    return {"out": out.astype(x.dtype)}
