"""Kernels of gradc.ops.fused_attention: fused_attention and its grad, in float64 inside (the grad recomputes the
layer from its inputs: with no dropout draws, the saved intermediates hold nothing the inputs do not)."""

from __future__ import annotations

import numpy as np

from ...ops.fused_attention import ATTENTION_STATE, attention_dropout_factor, attention_scale, heads
from ...ops.fused_ffn import dropout_factor
from . import kernel
from .fused_ffn import layer_norm, layer_norm_grad


def _f64(k, slot: str):
    value = k.optional(slot)
    return None if value is None else value.astype(np.float64)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer(k, cache: bool) -> dict:
    """Every value of the layer, in float64: x [b, s, e], q k v [b, nh, s(_kv), dh], the scores and the output;
    ``cache``: read CacheKV (the grad op has none)."""
    x = k.x("X").astype(np.float64)
    b, s, e = x.shape
    transposed, weight = k.attr("transpose_qkv_wb"), _f64(k, "QKVW")
    nh, dh = heads(k.attr, list(weight.shape), transposed)
    v = {"x": x, "h": x, "nh": nh, "dh": dh, "W": weight}
    if k.attr("pre_layer_norm"):
        h, v["mean1"], v["var1"] = layer_norm(x.reshape(-1, e), _f64(k, "LnScale"), _f64(k, "LnBias"),
                                              k.attr("epsilon"))
        v["h"] = h.reshape(x.shape)
    v["matrix"] = weight if transposed else weight.reshape(3 * e, e).T   # h matrix = [b, s, 3e]
    qkv = v["h"] @ v["matrix"]
    bias = _f64(k, "QKVBias")
    v["qkv"], v["qkv_bias"] = qkv, qkv + (0 if bias is None else bias.reshape(-1))
    t = v["qkv_bias"].reshape(b, s, 3, nh, dh).transpose(2, 0, 3, 1, 4)
    v["alpha"] = attention_scale(dh)
    v["q"], v["k"], v["v"] = t[0] * v["alpha"], t[1], t[2]
    cache = _f64(k, "CacheKV") if cache else None
    if cache is not None:
        v["k"], v["v"] = np.concatenate([cache[0], t[1]], 2), np.concatenate([cache[1], t[2]], 2)
    v["qk"] = v["q"] @ v["k"].swapaxes(-1, -2)
    mask = _f64(k, "SrcMask")
    v["masked"] = v["qk"] + (0 if mask is None else mask)
    v["p"] = _softmax(v["masked"])
    v["pd"] = v["p"] * attention_dropout_factor(k.attr)
    v["ctx"] = v["pd"] @ v["v"]
    v["fmha"] = v["ctx"].transpose(0, 2, 1, 3)
    v["linear"] = v["fmha"].reshape(b, s, e) @ _f64(k, "OutLinearW")
    out_bias = _f64(k, "OutLinearBias")
    v["r"] = (v["linear"] + (0 if out_bias is None else out_bias)) * dropout_factor(k.attr, "dropout")
    v["r"] = v["r"] + x if k.attr("add_residual") else v["r"]
    v["y"] = v["r"]
    if not k.attr("pre_layer_norm"):
        y, v["mean2"], v["var2"] = layer_norm(v["r"].reshape(-1, e), _f64(k, "Ln2Scale"), _f64(k, "Ln2Bias"),
                                              k.attr("ln_epsilon"))
        v["y"] = y.reshape(x.shape)
    return v


@kernel("fused_attention")
def fused_attention(k):
    x = k.x("X")
    v = _layer(k, cache=True)
    b, s, e = x.shape
    stats = np.float32 if x.dtype == np.float16 else x.dtype
    rows = b * s
    for name in ("mean1", "var1", "mean2", "var2"):   # the layer norm that does not run: zeros (Paddle: unwritten)
        v.setdefault(name, np.zeros(rows))
    qkv_shape = (b, s, 3 * e) if k.attr("transpose_qkv_wb") else (b, s, 3, v["nh"], v["dh"])
    keep = k.attr("is_test") or attention_dropout_factor(k.attr) != 0
    transposed = np.stack([v["q"], v["k"][:, :, -s:], v["v"][:, :, -s:]])

    def cast(value, shape=None, dtype=x.dtype):
        return lambda: np.asarray(value).reshape(value.shape if shape is None else shape).astype(dtype)

    return k.grads({
        "Y": cast(v["y"]), "LnMean": cast(v["mean1"], dtype=stats), "LnVariance": cast(v["var1"], dtype=stats),
        "LnOut": cast(v["h"]), "QKVOut": cast(v["qkv"], qkv_shape), "QKVBiasOut": cast(v["qkv_bias"], qkv_shape),
        "TransposeOut2": cast(transposed), "QKOut": cast(v["qk"]), "SrcMaskOut": cast(v["masked"]),
        "SoftmaxOut": cast(v["p"]), "AttnDropoutOut": cast(v["pd"]), "QKTVOut": cast(v["ctx"]),
        "AttnDropoutMaskOut": lambda: np.full(v["p"].shape, keep, np.uint8), "FMHAOut": cast(v["fmha"]),
        "OutLinearOut": cast(v["linear"]),
        "DropoutMaskOut": lambda: np.full(x.shape, k.attr("is_test") or dropout_factor(k.attr, "dropout") != 0,
                                          np.uint8),
        "Ln2Mean": cast(v["mean2"], dtype=stats), "Ln2Variance": cast(v["var2"], dtype=stats),
        "BiasDropoutResidualOut": cast(v["r"]), "CacheKVOut": cast(np.stack([v["k"], v["v"]]))})


@kernel("fused_attention_grad", shape_only=tuple(slot.rstrip("?") for slot in ATTENTION_STATE))
def fused_attention_grad(k):
    """Back through the post layer norm, the residual, the out linear, P v, the softmax, q k^T, the qkv linear
    and the pre layer norm."""
    v = _layer(k, cache=False)
    x = v["x"]
    b, s, e = x.shape
    dr, grads = k.x("Y@GRAD").astype(np.float64), {}
    if not k.attr("pre_layer_norm"):
        dr, grads["Ln2Scale@GRAD"], grads["Ln2Bias@GRAD"] = layer_norm_grad(
            v["r"].reshape(-1, e), _f64(k, "Ln2Scale"), k.attr("ln_epsilon"), dr.reshape(-1, e))
        dr = dr.reshape(x.shape)
    dx = dr.copy() if k.attr("add_residual") else np.zeros_like(x)
    dlinear = (dr * dropout_factor(k.attr, "dropout")).reshape(-1, e)
    grads["OutLinearBias@GRAD"] = dlinear.sum(0)
    grads["OutLinearW@GRAD"] = v["fmha"].reshape(-1, e).T @ dlinear
    dctx = (dlinear @ _f64(k, "OutLinearW").T).reshape(b, s, v["nh"], v["dh"]).transpose(0, 2, 1, 3)
    dpd, dv = dctx @ v["v"].swapaxes(-1, -2), v["pd"].swapaxes(-1, -2) @ dctx
    dp = dpd * attention_dropout_factor(k.attr)
    dscores = v["p"] * (dp - (dp * v["p"]).sum(-1, keepdims=True))
    dq, dk = dscores @ v["k"] * v["alpha"], dscores.swapaxes(-1, -2) @ v["q"]
    dt = np.stack([dq, dk, dv])
    dqkv = dt.transpose(1, 3, 0, 2, 4).reshape(b * s, 3 * e)
    grads["QKVBias@GRAD"] = dqkv.sum(0)
    h = v["h"].reshape(-1, e)
    dmatrix = h.T @ dqkv
    grads["QKVW@GRAD"] = dmatrix if k.attr("transpose_qkv_wb") else dmatrix.T
    dh = dqkv @ v["matrix"].T
    if k.attr("pre_layer_norm"):
        dh, grads["LnScale@GRAD"], grads["LnBias@GRAD"] = layer_norm_grad(x.reshape(-1, e), _f64(k, "LnScale"),
                                                                          k.attr("epsilon"), dh)
    grads["X@GRAD"] = dx + dh.reshape(x.shape)

    def like(slot: str):
        source = k.optional(slot.removesuffix("@GRAD"))
        return lambda: grads[slot].reshape(source.shape).astype(source.dtype)

    return k.grads({slot: like(slot) for slot in grads})
