"""Kernels of gradc.ops.fused_bn_act: batch_norm's training-mode math (gradc.executor.kernels.nn's moments and
norm_grad) on a channel-last X, then relu (after adding Z), the running variance updated as cuDNN does (with the
unbiased batch variance); the grads pass dY where Y > 0."""

from __future__ import annotations

import numpy as np

from . import kernel
from .channel_stats import not_channel, per_channel
from .nn import moments, norm_grad


def _channels_first(x):
    return np.moveaxis(x, -1, 1)


def _channels_last(x):
    return np.moveaxis(x, 1, -1)


def _single_value(k, x) -> bool:
    """One value per channel: fused_batch_norm_act's kernel then writes Y = act(X) and leaves the statistics;
    fused_bn_add_activation's has no such case (X normalises to 0: Y = act(Bias + Z))."""
    return x.size == x.shape[-1] and k.op.type.startswith("fused_batch_norm_act")


def _forward(k, z):
    x, eps = k.x("X"), k.attr("epsilon")
    running_mean, running_var = k.x("Mean"), k.x("Variance")
    stats = running_mean.dtype
    if _single_value(k, x):
        zeros = np.zeros(x.shape[-1], stats)
        return {"Y": np.maximum(x, 0), "MeanOut": running_mean, "VarianceOut": running_var, "SavedMean": zeros,
                "SavedVariance": zeros, "ReserveSpace": np.empty(0, np.uint8)}
    first = _channels_first(x)
    mean, var = moments(first, not_channel(first))
    inv = 1 / np.sqrt(var + eps)
    normed = (first - mean) * inv * per_channel(k.x("Scale"), first) + per_channel(k.x("Bias"), first)
    y = _channels_last(normed).astype(x.dtype) + (0 if z is None else z)
    m = k.attr("momentum")
    count = x.size // x.shape[-1]   # cuDNN's running variance takes the unbiased batch variance (one value: the biased)
    unbiased = var * (count / (count - 1)) if count > 1 else var
    mean, unbiased, inv = (v.reshape(-1).astype(stats) for v in (mean, unbiased, inv))
    return {"Y": np.maximum(y, 0), "MeanOut": m * running_mean + (1 - m) * mean,
            "VarianceOut": m * running_var + (1 - m) * unbiased, "SavedMean": mean, "SavedVariance": inv,
            "ReserveSpace": np.empty(0, np.uint8)}


@kernel("fused_batch_norm_act")
def fused_batch_norm_act(k):
    return _forward(k, None)


@kernel("fused_bn_add_activation")
def fused_bn_add_activation(k):
    return _forward(k, k.x("Z"))


@kernel("fused_batch_norm_act_grad", "fused_bn_add_activation_grad")
def fused_bn_act_grad(k):
    """dZ = dY where Y > 0 (g); dBias = sum(g), dScale = sum(g xhat), dX = norm_grad(xhat, g scale) over all but the
    channels; fused_batch_norm_act with one value per channel (Y = act(X)): dX = g."""
    x, scale = k.x("X"), k.x("Scale")
    passed = np.where(k.x("Y") > 0, k.x("Y@GRAD"), 0).astype(x.dtype)
    to_z = {"Z@GRAD": lambda: passed} if k.op.type == "fused_bn_add_activation_grad" else {}
    if _single_value(k, x):
        return k.grads({"X@GRAD": lambda: passed, "Scale@GRAD": lambda: np.zeros_like(scale),
                        "Bias@GRAD": lambda: np.zeros_like(scale), **to_z})
    first, g = _channels_first(x), _channels_first(passed)
    axes = not_channel(first)
    inv = per_channel(k.x("SavedVariance"), first)
    xhat = (first - per_channel(k.x("SavedMean"), first)) * inv
    return k.grads({
        "X@GRAD": lambda: _channels_last(norm_grad(xhat, g * per_channel(scale, first), inv, axes)).astype(x.dtype),
        "Scale@GRAD": lambda: (g * xhat).sum(axis=axes).astype(scale.dtype),
        "Bias@GRAD": lambda: g.sum(axis=axes).astype(scale.dtype), **to_z})

