"""Kernels of gradc.ops.cudnn_fusion: NHWC activations, OIHW filters, gradc's conv2d (channels first inside),
computed in float64 and returned in the input's dtype, the statistics in their declared dtype."""

from __future__ import annotations

import numpy as np

from ...ops.conv import resolve_padding
from . import kernel
from .conv import conv, conv_filter_grad, conv_input_grad
from .conv_columns import Geometry
from .nn import norm_grad

FLT_EPSILON = float(np.finfo(np.float32).eps)   # the kernels raise epsilon to CUDNN_BN_MIN_EPSILON (0) + FLT_EPSILON


def geometry(k, x_nchw, w) -> Geometry:
    if k.attr("data_format") != "NHWC" or k.attr("groups") != 1:
        raise ValueError(f"the cuDNN kernel takes NHWC data with groups 1, got data_format "
                         f"{k.attr('data_format')!r} and groups {k.attr('groups')}")
    if x_nchw.shape[1] != w.shape[1]:
        raise ValueError(f"an NHWC input of {x_nchw.shape[1]} channels does not fit the OIHW filter {list(w.shape)}")
    pads, dils = resolve_padding(x_nchw.shape[2:], w.shape[2:], k.attr("strides"), k.attr("paddings"),
                                 k.attr("dilations"), k.attr("padding_algorithm"))
    return Geometry(tuple(k.attr("strides")), tuple(pads), tuple(dils), 1)


def nchw(a):
    return np.moveaxis(a.astype(np.float64), -1, 1)


def nhwc(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def scale_bias(x, scale, bias):
    """x scale + bias per channel of an NHWC x (the last dim), in float64."""
    return x.astype(np.float64) * scale.astype(np.float64) + bias.astype(np.float64)


def unbiased(var, count: int):
    """The batch variance cuDNN's BN finalize blends into the running one: count / (count - 1) times the biased (one
    value a channel: the biased 0, as fused_bn_act's kernel keeps it)."""
    return var * (count / (count - 1)) if count > 1 else var


@kernel("fused_scale_bias_relu_conv_bn")
def fused_scale_bias_relu_conv_bn(k):
    x, w = k.x("x"), k.x("w")
    dtype = x.dtype
    if k.attr("fuse_prologue"):
        if k.optional("scale") is None or k.optional("bias") is None:
            raise ValueError("fuse_prologue needs scale and bias")
        x = np.maximum(scale_bias(x, k.x("scale"), k.x("bias")), 0)
    x_nchw, w64 = nchw(x), w.astype(np.float64)
    out = conv(x_nchw, w64, geometry(k, x_nchw, w64))
    count = k.attr("accumulation_count") or out.shape[0] * out.shape[2] * out.shape[3]
    mean = out.sum(axis=(0, 2, 3)) / count
    var = (out * out).sum(axis=(0, 2, 3)) / count - mean * mean
    inv_std = 1 / np.sqrt(var + max(k.attr("epsilon"), FLT_EPSILON))
    eq_scale = k.x("bn_scale").astype(np.float64) * inv_std
    m = k.attr("momentum")
    running_mean, running_var = k.x("input_running_mean"), k.x("input_running_var")
    stats = running_mean.dtype
    return {"out": nhwc(out).astype(dtype),
            "out_running_mean": (m * running_mean + (1 - m) * mean).astype(stats),
            "out_running_var": (m * running_var + (1 - m) * unbiased(var, count)).astype(stats),
            "saved_mean": mean.astype(stats), "saved_var": inv_std.astype(stats), "eq_scale": eq_scale.astype(dtype),
            "eq_bias": (k.x("bn_bias") - mean * eq_scale).astype(dtype)}


@kernel("fused_scale_bias_add_relu")
def fused_scale_bias_add_relu(k):
    x1, x2 = k.x("x1"), k.x("x2")
    if x1.shape != x2.shape:
        raise ValueError(f"x1 {list(x1.shape)} and x2 {list(x2.shape)} must have one shape")
    other = x2.astype(np.float64)
    if k.attr("fuse_dual"):
        if k.optional("scale2") is None or k.optional("bias2") is None:
            raise ValueError("fuse_dual needs scale2 and bias2")
        other = scale_bias(x2, k.x("scale2"), k.x("bias2"))
    return {"out": np.maximum(scale_bias(x1, k.x("scale1"), k.x("bias1")) + other, 0).astype(x1.dtype)}


def _normalised(k, prefix: str):
    """(xhat, h) of a BN input in NCHW with its given mean and inverse std: h = gamma xhat + beta."""
    x = nchw(k.x(f"{prefix}_input"))
    xhat = (x - _vector(k.x(f"{prefix}_mean"))) * _vector(k.x(f"{prefix}_inv_std"))
    return xhat, xhat * _vector(k.x(f"{prefix}_gamma")) + _vector(k.x(f"{prefix}_beta"))


def _vector(a):
    return a.reshape(1, -1, 1, 1).astype(np.float64)


def _bn_grads(k, prefix: str, xhat, g, stats) -> dict:
    """batch_norm's training grads at g (NCHW) with the given statistics."""
    axes, inv_std, gamma = (0, 2, 3), _vector(k.x(f"{prefix}_inv_std")), _vector(k.x(f"{prefix}_gamma"))
    return {f"grad_{prefix}_input": nhwc(norm_grad(xhat, g * gamma, inv_std, axes)).astype(k.x("grad_output").dtype),
            f"grad_{prefix}_gamma": (g * xhat).sum(axis=axes).astype(stats),
            f"grad_{prefix}_beta": g.sum(axis=axes).astype(stats)}


@kernel("fused_dconv_drelu_dbn")
def fused_dconv_drelu_dbn(k):
    dy, w = nchw(k.x("grad_output")), k.x("weight").astype(np.float64)
    xhat1, h = _normalised(k, "bn1")
    shortcut, dual = k.attr("fuse_shortcut"), k.attr("fuse_dual")
    if dual:
        xhat2, h2 = _normalised(k, "bn2")
        h = h + h2
    elif shortcut:
        h = h + nchw(k.x("residual_input"))
    geo = geometry(k, h, w)
    if dy.shape[1] != w.shape[0]:
        raise ValueError(f"grad_output's {dy.shape[1]} channels do not fit weight {list(w.shape)}")
    dr = conv_input_grad(dy, w, h.shape[2:], geo)
    if k.attr("fuse_add"):
        dr = dr + nchw(k.x("grad_output_add"))
    g, stats = np.where(h > 0, dr, 0), k.x("bn1_mean").dtype
    if shortcut or dual:
        conv_input = nchw(k.x("conv_input"))
    else:
        conv_input = np.maximum(nchw(scale_bias(k.x("bn1_input"), k.x("bn1_eqscale"), k.x("bn1_eqbias"))), 0)
    results = {"grad_weight": conv_filter_grad(conv_input, dy, w.shape, geo).astype(k.x("weight").dtype),
               **_bn_grads(k, "bn1", xhat1, g, stats)}
    if dual:
        results |= _bn_grads(k, "bn2", xhat2, g, stats)
    elif shortcut:
        results["grad_bn2_input"] = nhwc(g).astype(k.x("grad_output").dtype)
    return results
