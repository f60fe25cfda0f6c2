"""Kernels of gradc.ops.fused_ffn: fused_feedforward and its grad, in float64 inside (the grad recomputes the layer
from its inputs: with no dropout draws, the saved intermediates hold nothing the inputs do not)."""

from __future__ import annotations

import numpy as np

from ...ops.fused_ffn import dropout_factor
from . import kernel
from .activation import _gelu, _gelu_grad

FFN_SAVED = ("Dropout1Mask", "Dropout2Mask", "Ln1Mean", "Ln1Variance", "Ln2Mean", "Ln2Variance", "Linear1Out",
             "Ln1Out", "Dropout1Out", "Dropout2Out")


def layer_norm(h: np.ndarray, scale, bias, epsilon: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, mean, variance) over the last dim of h [rows, cols]; a missing scale is ones, a missing bias zeros."""
    mean, variance = h.mean(1, keepdims=True), h.var(1, keepdims=True)
    y = (h - mean) / np.sqrt(variance + epsilon)
    return y * (1 if scale is None else scale) + (0 if bias is None else bias), mean[:, 0], variance[:, 0]


def layer_norm_grad(h: np.ndarray, scale, epsilon: float, dy: np.ndarray) -> tuple[np.ndarray, ...]:
    """(dh, dscale, dbias) of layer_norm at h for the output grad dy."""
    mean, invvar = h.mean(1, keepdims=True), 1 / np.sqrt(h.var(1, keepdims=True) + epsilon)
    xhat = (h - mean) * invvar
    dxhat = dy * (1 if scale is None else scale)
    dh = invvar * (dxhat - dxhat.mean(1, keepdims=True) - xhat * (dxhat * xhat).mean(1, keepdims=True))
    return dh, (dy * xhat).sum(0), dy.sum(0)


def _f64(k, slot: str):
    value = k.optional(slot)
    return None if value is None else value.astype(np.float64)


def _activate(z: np.ndarray, method: str) -> np.ndarray:
    return _gelu(z, False) if method == "gelu" else np.maximum(z, 0)


def _activate_grad(z: np.ndarray, d: np.ndarray, method: str) -> np.ndarray:
    return _gelu_grad(z, d, False) if method == "gelu" else d * (z > 0)


def _layer(k) -> dict:
    """Every value of the layer for X as [rows, d_model], in float64."""
    x = k.x("X")
    rows = x.astype(np.float64).reshape(-1, x.shape[-1])
    pre = k.attr("pre_layer_norm")
    v = {"x": rows, "h": rows, "W1": _f64(k, "Linear1Weight"), "W2": _f64(k, "Linear2Weight")}
    if pre:
        v["h"], v["mean1"], v["var1"] = layer_norm(rows, _f64(k, "Ln1Scale"), _f64(k, "Ln1Bias"), k.attr("ln1_epsilon"))
    b1, b2 = _f64(k, "Linear1Bias"), _f64(k, "Linear2Bias")
    v["linear1"] = v["h"] @ v["W1"]
    v["z"] = v["linear1"] + (0 if b1 is None else b1)
    v["a"] = _activate(v["z"], k.attr("act_method")) * dropout_factor(k.attr, "dropout1")
    v["s"] = (v["a"] @ v["W2"] + (0 if b2 is None else b2)) * dropout_factor(k.attr, "dropout2")
    if k.attr("add_residual"):
        v["s"] = v["s"] + rows
    v["out"] = v["s"]
    if not pre:
        v["out"], v["mean2"], v["var2"] = layer_norm(v["s"], _f64(k, "Ln2Scale"), _f64(k, "Ln2Bias"),
                                                     k.attr("ln2_epsilon"))
    return v


def _mask(k, which: str, shape) -> np.ndarray:
    """A dropout's kept elements: all, except in training at a rate of 1 (none)."""
    return np.full(shape, k.attr("is_test") or dropout_factor(k.attr, which) != 0, np.uint8)


@kernel("fused_feedforward")
def fused_feedforward(k):
    x = k.x("X")
    v = _layer(k)
    stats = np.float32 if x.dtype == np.float16 else x.dtype
    inner = (*x.shape[:-1], v["W1"].shape[1])

    def shaped(name: str, shape=x.shape, dtype=x.dtype):
        return lambda: v[name].reshape(shape).astype(dtype)

    outputs = {"Out": shaped("out"), "Linear1Out": shaped("linear1", inner), "Dropout1Out": shaped("a", inner),
               "Dropout2Out": shaped("s"), "Dropout1Mask": lambda: _mask(k, "dropout1", inner),
               "Dropout2Mask": lambda: _mask(k, "dropout2", x.shape)}
    rows = v["x"].shape[0]
    for name in ("mean1", "var1", "mean2", "var2"):   # the layer norm that does not run: zeros (Paddle: unwritten)
        v.setdefault(name, np.zeros(rows))
    outputs |= {"Ln1Out": shaped("h"), **{slot: shaped(name, (rows,), stats) for slot, name in (
        ("Ln1Mean", "mean1"), ("Ln1Variance", "var1"), ("Ln2Mean", "mean2"), ("Ln2Variance", "var2"))}}
    return k.grads(outputs)


@kernel("fused_feedforward_grad", shape_only=FFN_SAVED)
def fused_feedforward_grad(k):
    """Back through the layer: the post layer norm's grad, the residual, linear 2, the activation, linear 1 and
    the pre layer norm's grad."""
    x = k.x("X")
    v = _layer(k)
    ds = k.x("Out@GRAD").astype(np.float64).reshape(v["out"].shape)
    grads = {}
    if not k.attr("pre_layer_norm"):
        ds, grads["Ln2Scale@GRAD"], grads["Ln2Bias@GRAD"] = layer_norm_grad(v["s"], _f64(k, "Ln2Scale"),
                                                                            k.attr("ln2_epsilon"), ds)
    dx = ds.copy() if k.attr("add_residual") else np.zeros_like(ds)
    dl2 = ds * dropout_factor(k.attr, "dropout2")
    grads["Linear2Bias@GRAD"], grads["Linear2Weight@GRAD"] = dl2.sum(0), v["a"].T @ dl2
    da = dl2 @ v["W2"].T * dropout_factor(k.attr, "dropout1")
    dz = _activate_grad(v["z"], da, k.attr("act_method"))
    grads["Linear1Bias@GRAD"], grads["Linear1Weight@GRAD"] = dz.sum(0), v["h"].T @ dz
    dh = dz @ v["W1"].T
    if k.attr("pre_layer_norm"):
        dh, grads["Ln1Scale@GRAD"], grads["Ln1Bias@GRAD"] = layer_norm_grad(v["x"], _f64(k, "Ln1Scale"),
                                                                            k.attr("ln1_epsilon"), dh)
    grads["X@GRAD"] = dx + dh

    def like(slot: str):
        source = k.optional(slot.removesuffix("@GRAD"))
        shape, dtype = (x.shape, x.dtype) if source is None else (source.shape, source.dtype)
        return lambda: grads[slot].reshape(shape).astype(dtype)

    return k.grads({slot: like(slot) for slot in grads})
