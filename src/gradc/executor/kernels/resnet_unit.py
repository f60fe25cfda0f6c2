"""Kernels of gradc.ops.resnet_unit: gradc's conv2d on the NHWC data (channels first inside) with the KRSC filters
as OIHW, batch norm's statistics and grads (gradc.executor.kernels.nn's moments and norm_grad) in float64."""

from __future__ import annotations

import numpy as np

from ...ops.resnet_unit import BRANCHES, OUTPUTS, bitmask_shape, krsc_filter
from . import kernel
from .conv import conv, conv_filter_grad, conv_input_grad
from .conv_columns import Geometry
from .nn import moments, norm_grad

AXES = (0, 2, 3)


def _geometry(k, stride: str) -> Geometry:
    pad, step, dilation = k.attr("padding"), k.attr(stride), k.attr("dilation")
    return Geometry((step, step), (pad,) * 4, (dilation, dilation), k.attr("group"))


def _oihw(w):
    return np.moveaxis(w.reshape(krsc_filter(list(w.shape))).astype(np.float64), -1, 1)


def _vector(a):
    return a.reshape(1, -1, 1, 1).astype(np.float64)


def _frozen(k) -> bool:
    return k.attr("is_test") or k.attr("use_global_stats")


def _branch(k, data: str, stride: str):
    """(BN(conv) in NCHW, the outputs of this branch): the conv, its statistics and the running ones."""
    filter_slot, scale_slot, bias_slot, mean_slot, var_slot = BRANCHES[data]
    x, w = np.moveaxis(k.x(data).astype(np.float64), -1, 1), _oihw(k.x(filter_slot))
    if x.shape[1] != w.shape[1] * k.attr("group"):
        raise ValueError(f"{filter_slot} {list(k.x(filter_slot).shape)} (KRSC, group {k.attr('group')}) does not fit "
                         f"{data}'s {x.shape[1]} channels")
    out = conv(x, w, _geometry(k, stride))
    running_mean, running_var = k.x(mean_slot), k.x(var_slot)
    stats, eps = running_mean.dtype, k.attr("epsilon")
    if _frozen(k):
        mean, var = _vector(running_mean), _vector(running_var)
        new_mean, new_var = running_mean, running_var
    else:
        mean, var = moments(out, AXES)
        m = k.attr("momentum")
        new_mean = (m * running_mean + (1 - m) * mean.reshape(running_mean.shape)).astype(stats)
        new_var = (m * running_var + (1 - m) * var.reshape(running_var.shape)).astype(stats)
    inv_std = 1 / np.sqrt(var + eps)
    normed = (out - mean) * inv_std * _vector(k.x(scale_slot)) + _vector(k.x(bias_slot))
    conv_slot, saved_mean, saved_inv, running_mean_out, running_var_out = OUTPUTS[data]
    shape = running_mean.shape
    return normed, {conv_slot: np.moveaxis(out, 1, -1).astype(k.x(data).dtype),
                    saved_mean: mean.reshape(shape).astype(stats), saved_inv: inv_std.reshape(shape).astype(stats),
                    running_mean_out: new_mean, running_var_out: new_var}


@kernel("resnet_unit")
def resnet_unit(k):
    total, results = _branch(k, "X", "stride")
    if k.attr("has_shortcut"):
        shortcut, more = _branch(k, "Z", "stride_z")
        if shortcut.shape != total.shape:
            raise ValueError(f"the shortcut's output {list(shortcut.shape)} must match the main branch's "
                             f"{list(total.shape)} (NCHW)")
        total, results = total + shortcut, results | more
    elif k.attr("fuse_add"):
        z = np.moveaxis(k.x("Z").astype(np.float64), -1, 1)
        if z.shape != total.shape:
            raise ValueError(f"Z {list(k.x('Z').shape)} must have Y's shape")
        total = total + z
    y = np.moveaxis(np.maximum(total, 0), 1, -1).astype(k.x("X").dtype)
    return results | {"Y": y, "BitMask": np.zeros(bitmask_shape(list(y.shape)), np.int32)}


def _branch_grad(k, data: str, stride: str, g) -> dict:
    """The grads of one branch's data, filter, scale and bias at g, the grad of its BN output (NCHW)."""
    filter_slot, scale_slot, bias_slot = BRANCHES[data][:3]
    conv_slot, saved_mean, saved_inv = OUTPUTS[data][:3]
    out = np.moveaxis(k.x(conv_slot).astype(np.float64), -1, 1)
    inv_std, scale = _vector(k.x(saved_inv)), k.x(scale_slot)
    xhat = (out - _vector(k.x(saved_mean))) * inv_std
    scaled = g * _vector(scale)
    d_out = scaled * inv_std if _frozen(k) else norm_grad(xhat, scaled, inv_std, AXES)
    x, w_krsc = k.x(data), k.x(filter_slot)
    w, geo = _oihw(w_krsc), _geometry(k, stride)
    x_nchw = np.moveaxis(x.astype(np.float64), -1, 1)
    return {f"{data}@GRAD": lambda: np.moveaxis(conv_input_grad(d_out, w, x_nchw.shape[2:], geo), 1, -1).astype(
                x.dtype),
            f"{filter_slot}@GRAD": lambda: np.moveaxis(conv_filter_grad(x_nchw, d_out, w.shape, geo), 1, -1).reshape(
                w_krsc.shape).astype(w_krsc.dtype),
            f"{scale_slot}@GRAD": lambda: (g * xhat).sum(axis=AXES).reshape(scale.shape).astype(scale.dtype),
            f"{bias_slot}@GRAD": lambda: g.sum(axis=AXES).reshape(scale.shape).astype(scale.dtype)}


@kernel("resnet_unit_grad")
def resnet_unit_grad(k):
    """g = dY where Y > 0; each branch's batch-norm grad (the frozen-statistics one with is_test or
    use_global_stats) then conv2d's grads; with fuse_add, Z@GRAD = g."""
    y = k.x("Y")
    g = np.moveaxis(np.where(y > 0, k.x("Y@GRAD"), 0).astype(np.float64), -1, 1)
    makers = _branch_grad(k, "X", "stride", g)
    if k.attr("has_shortcut"):
        makers |= _branch_grad(k, "Z", "stride_z", g)
    elif k.attr("fuse_add"):
        makers["Z@GRAD"] = lambda: np.moveaxis(g, 1, -1).astype(y.dtype)
    return k.grads(makers)
