"""Kernels of gradc.ops.fused_norm: fast_ln, fast_rms_norm, rms_norm and their grads, in float64 inside (the grads
recompute the statistics from x)."""

from __future__ import annotations

import numpy as np

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


@kernel("fast_rms_norm", "rms_norm")
def rms_norms(k):
    return _forward(k, False)


@kernel("fast_ln_grad", shape_only=("mean", "invvar"))
def fast_ln_grad(k):
    return _backward(k, True)


@kernel("fast_rms_norm_grad", "rms_norm_grad", shape_only=("invvar",))
def rms_norm_grads(k):
    return _backward(k, False)
