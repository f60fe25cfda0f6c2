"""Kernels of gradc.ops.norm_second. With xhat = (x - mean) inv over the statistics' axes (a batch norm channel's, an
instance norm plane's), P(v) = v - mean(v) - xhat mean(v xhat) (symmetric) and s the scale, the first grad op is
dX = s inv P(dY), dScale = sum(dY xhat), dBias = sum(dY); at the grads ddX, ddS, ddB of those:
    ddY = s inv P(ddX) + ddS xhat + ddB,   dScale' = sum(inv P(dY) ddX),
    dX' = ddS inv P(dY) - s inv^2 (xhat mean(P(dY) ddX) + mean(xhat ddX) P(dY) + mean(dY xhat) P(ddX)),
the batch's statistics recomputed from X. With global statistics (constants) P is the identity and dX' = ddS inv dY.
"""

from __future__ import annotations

import numpy as np

from . import kernel
from .channel_stats import not_channel, per_channel
from .nn import _channels_back, _channels_first, _global_stats, moments


def _second(x, dy, scale, dd: tuple, axes: tuple[int, ...], epsilon: float, stats=None) -> tuple:
    """(dX', dScale', ddY) of channels-first arrays; ``dd`` = (ddX, ddS, ddB), None where absent; ``stats`` the
    running (mean, variance) when they are constants."""
    ddx, dds, ddb = (np.zeros_like(like) if value is None else value for value, like in zip(dd, (x, scale, scale)))
    if stats is None:
        mean, var = moments(x, axes)
    else:
        mean, var = (per_channel(value, x) for value in stats)
    inv, s, dds, ddb = 1 / np.sqrt(var + epsilon), per_channel(scale, x), per_channel(dds, x), per_channel(ddb, x)
    xhat = (x - mean) * inv
    sums = not_channel(x)
    if stats is not None:
        return dds * inv * dy, (inv * dy * ddx).sum(axis=sums), s * inv * ddx + dds * xhat + ddb

    def mean_of(v):
        return v.mean(axis=axes, keepdims=True)

    def project(v):
        return v - mean_of(v) - xhat * mean_of(v * xhat)

    p_dy, p_ddx = project(dy), project(ddx)
    dx = dds * inv * p_dy - s * inv * inv * (xhat * mean_of(p_dy * ddx) + mean_of(xhat * ddx) * p_dy
                                             + mean_of(dy * xhat) * p_ddx)
    return dx, (inv * p_dy * ddx).sum(axis=sums), s * inv * p_ddx + dds * xhat + ddb


def _scale(k, slot: str, x):
    """The scale, ones where the norm has none (PIR's batch_norm without a weight)."""
    scale = k.optional(slot)
    return np.ones(x.shape[1], x.dtype) if scale is None else scale


def _scale_grad(k, slot: str, grad):
    """The scale's grad, zeros where the norm has no scale (a constant then)."""
    return grad if k.optional(slot) is not None else np.zeros_like(grad)


@kernel("batch_norm_grad_grad")
def batch_norm_grad_grad(k):
    layout = k.attr("data_layout")
    x, dy, ddx = (_channels_first(v, layout) if v is not None else None
                  for v in (k.x("X"), k.x("DY"), k.optional("DDX")))
    stats = (k.x("Mean"), k.x("Variance")) if _global_stats(k) else None
    dx, dscale, ddy = _second(x, dy, _scale(k, "Scale", x), (ddx, k.optional("DDScale"), k.optional("DDBias")),
                              not_channel(x), k.attr("epsilon"), stats)
    return {"DX": _channels_back(dx, layout), "DScale": _scale_grad(k, "Scale", dscale),
            "DDY": _channels_back(ddy, layout)}


@kernel("instance_norm_double_grad")
def instance_norm_double_grad(k):
    x = k.x("x")
    dx, dscale, ddy = _second(x, k.x("grad_y"), _scale(k, "scale", x), tuple(k.optional(slot) for slot in (
        "grad_x@GRAD", "grad_scale@GRAD", "grad_bias@GRAD")), tuple(range(2, x.ndim)), k.attr("epsilon"))
    return {"x@GRAD": dx, "scale@GRAD": _scale_grad(k, "scale", dscale), "grad_y@GRAD": ddy}
