"""Kernels of gradc.ops.fused_norm: fast_ln, fast_rms_norm, fused_rms_norm_ext, rms_norm,
fused_bias_dropout_residual_layer_norm and
their grads, in float64 inside (the grads recompute the statistics from the inputs)."""

from __future__ import annotations

import numpy as np

from ...ops.fused_norm import dropout_factor
from . import kernel


def _rows(k) -> tuple[np.ndarray, int]:
    """x as [rows, normalised elements] in float64, and the first normalised dim."""
    x = k.x("x")
    axis = x.ndim - (len(k.attr("normalized_shape")) if k.op.type.startswith("rms_norm") else 1)
    rows, cols = int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:]))
    return x.astype(np.float64).reshape(rows, cols), axis


def _stats(flat: np.ndarray, centred: bool, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """(mean [rows, 1], invvar [rows, 1]): mean 0 for an RMS norm."""
    mean = flat.mean(axis=1, keepdims=True) if centred else np.zeros((flat.shape[0], 1))
    return mean, 1 / np.sqrt(np.mean((flat - mean) ** 2, axis=1, keepdims=True) + epsilon)


def _flat(k, slot: str, cols: int):
    value = k.optional(slot)
    return np.ones(cols) if value is None else value.astype(np.float64).reshape(cols)


def _forward(k, centred: bool) -> dict:
    x = k.x("x")
    flat, _ = _rows(k)
    mean, invvar = _stats(flat, centred, k.attr("epsilon"))
    y = (flat - mean) * invvar * _flat(k, "scale", flat.shape[1])
    if centred:
        y = y + _flat(k, "bias", flat.shape[1])
    stats = np.float64 if x.dtype == np.float64 else np.float32
    return {"y": y.reshape(x.shape).astype(x.dtype), "invvar": invvar.reshape(-1).astype(stats),
            **({"mean": mean.reshape(-1).astype(stats)} if centred else {})}


def _backward(k, centred: bool) -> dict:
    """dx = invvar (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) (no mean(dxhat) term for an RMS norm), with
    xhat = (x - mean) invvar and dxhat = dy scale; dscale = sum over rows of dy xhat, dbias = sum of dy."""
    x = k.x("x")
    flat, _ = _rows(k)
    mean, invvar = _stats(flat, centred, k.attr("epsilon"))
    dy = k.x("y@GRAD").astype(np.float64).reshape(flat.shape)
    xhat = (flat - mean) * invvar
    dxhat = dy * _flat(k, "scale", flat.shape[1])
    inner = dxhat - xhat * np.mean(dxhat * xhat, axis=1, keepdims=True)
    if centred:
        inner = inner - np.mean(dxhat, axis=1, keepdims=True)
    scale = k.optional("scale")
    grads = {"x@GRAD": lambda: (invvar * inner).reshape(x.shape).astype(x.dtype),
             "scale@GRAD": lambda: (dy * xhat).sum(0).reshape(scale.shape).astype(scale.dtype)}
    if centred:
        grads["bias@GRAD"] = lambda: dy.sum(0).reshape(scale.shape).astype(scale.dtype)
    return k.grads(grads)


@kernel("fast_ln")
def fast_ln(k):
    return _forward(k, True)


@kernel("fast_rms_norm", "fused_rms_norm_ext", "rms_norm")
def rms_norms(k):
    return _forward(k, False)


@kernel("fast_ln_grad", shape_only=("mean", "invvar"))
def fast_ln_grad(k):
    return _backward(k, True)


@kernel("fast_rms_norm_grad", "fused_rms_norm_ext_grad", "rms_norm_grad", shape_only=("invvar",))
def rms_norm_grads(k):
    return _backward(k, False)


def _residual_sum(k) -> tuple[np.ndarray, float]:
    """h = residual + (x + bias) factor in float64, as [rows, cols], and the factor (no draws: a mask of ones)."""
    x, bias = k.x("X"), k.optional("Bias")
    factor = dropout_factor(k.attr)
    h = (x.astype(np.float64) + (0 if bias is None else bias)) * factor + k.x("Residual")
    return h.reshape(-1, x.shape[-1]), factor


def _ln_weight(k, slot: str, cols: int, value: float) -> np.ndarray:
    weight = k.optional(slot)
    return np.full(cols, value) if weight is None else weight.astype(np.float64)


@kernel("fused_bias_dropout_residual_layer_norm")
def fused_bias_dropout_residual_layer_norm(k):
    x = k.x("X")
    h, _ = _residual_sum(k)
    mean, invvar = _stats(h, True, k.attr("ln_epsilon"))
    y = (h - mean) * invvar * _ln_weight(k, "LnScale", h.shape[1], 1.0) + _ln_weight(k, "LnBias", h.shape[1], 0.0)
    stats = np.float64 if x.dtype == np.float64 else np.float32
    return k.grads({"Y": lambda: y.reshape(x.shape).astype(x.dtype),
                    "BiasDropoutResidualOut": lambda: h.reshape(x.shape).astype(x.dtype),
                    "DropoutMaskOut": lambda: np.ones(x.shape, np.uint8),
                    "LnMean": lambda: mean.reshape(-1).astype(stats),
                    "LnVariance": lambda: np.mean((h - mean) ** 2, axis=1).astype(stats)})


@kernel("fused_bias_dropout_residual_layer_norm_grad",
        shape_only=("LnMean", "LnVariance", "BiasDropoutResidualOut", "DropoutMaskOut"))
def fused_bias_dropout_residual_layer_norm_grad(k):
    """dh by the layer norm's grad (statistics recomputed from X, Residual, Bias); Residual takes dh, X dh factor,
    Bias dh factor summed over the rows."""
    x = k.x("X")
    h, factor = _residual_sum(k)
    mean, invvar = _stats(h, True, k.attr("ln_epsilon"))
    dy = k.x("Y@GRAD").astype(np.float64).reshape(h.shape)
    xhat = (h - mean) * invvar
    dxhat = dy * _ln_weight(k, "LnScale", h.shape[1], 1.0)
    dh = invvar * (dxhat - np.mean(dxhat, axis=1, keepdims=True) - xhat * np.mean(dxhat * xhat, axis=1, keepdims=True))
    like = {slot: k.optional(slot) for slot in ("Bias", "LnScale", "LnBias")}
    return k.grads({"X@GRAD": lambda: (dh * factor).reshape(x.shape).astype(x.dtype),
                    "Residual@GRAD": lambda: dh.reshape(x.shape).astype(x.dtype),
                    "Bias@GRAD": lambda: (dh * factor).sum(0).astype(like["Bias"].dtype),
                    "LnScale@GRAD": lambda: (dy * xhat).sum(0).astype(like["LnScale"].dtype),
                    "LnBias@GRAD": lambda: dy.sum(0).astype(like["LnBias"].dtype)})
