"""Kernels of gradc.ops.cudnn_fusion: NHWC activations, OIHW filters, gradc's conv2d (channels first inside),
computed in float64 and returned in the input's dtype, the statistics in their declared dtype."""

from __future__ import annotations

import numpy as np

from ...ops.conv import resolve_padding
from . import kernel
from .conv import conv
from .conv_columns import Geometry

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
            "out_running_var": (m * running_var + (1 - m) * var).astype(stats),
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
