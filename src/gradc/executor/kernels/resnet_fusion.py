"""Kernels of gradc.ops.resnet_fusion: gradc's conv2d (channels first inside; resnet_unit's NHWC data and KRSC
filters moved there), batch norm's statistics and grads (gradc.executor.kernels.nn's moments and norm_grad), all in
float64, returned in the inputs' dtypes."""

from __future__ import annotations

import numpy as np

from ...ops.resnet_fusion import BASIC_BRANCHES, BRANCHES, OUTPUTS, bitmask_shape, krsc_filter
from . import kernel
from .conv import conv, conv_filter_grad, conv_input_grad
from .conv_columns import Geometry
from .cudnn_fusion import unbiased
from .nn import moments, norm_grad

AXES = (0, 2, 3)


def _geometry(k, stride: str, padding: str = "padding", dilation: str = "dilation") -> Geometry:
    pad, step, dil = k.attr(padding), k.attr(stride), k.attr(dilation)
    return Geometry((step, step), (pad,) * 4, (dil, dil), k.attr("group"))


def _vector(a):
    return a.reshape(1, -1, 1, 1).astype(np.float64)


def _frozen(k) -> bool:
    """Normalising with the running statistics: resnet_basic_block's kernel trains on with trainable_statistics."""
    test = k.attr("is_test") and not (k.op.type.startswith("resnet_basic_block") and k.attr("trainable_statistics"))
    return test or k.attr("use_global_stats")


def batch_norm(k, out, slots: tuple[str, str, str, str], names: tuple[str, str, str, str], cudnn: bool = False):
    """(BN(out), its outputs {name: value}) for the NCHW ``out``; slots: scale, bias, mean, var; names: the saved
    mean and inverse std and the new running mean and var (blending in the unbiased batch variance when ``cudnn``:
    resnet_unit's BN finalize, XPU's basic block the biased one)."""
    scale, bias, running_mean, running_var = (k.x(slot) for slot in slots)
    stats, eps = running_mean.dtype, k.attr("epsilon")
    if _frozen(k):
        mean, var = _vector(running_mean), _vector(running_var)
        new_mean, new_var = running_mean, running_var
    else:
        mean, var = moments(out, AXES)
        m = k.attr("momentum")
        new_mean = (m * running_mean + (1 - m) * mean.reshape(running_mean.shape)).astype(stats)
        blended = unbiased(var, out.size // out.shape[1]) if cudnn else var
        new_var = (m * running_var + (1 - m) * blended.reshape(running_var.shape)).astype(stats)
    inv_std = 1 / np.sqrt(var + eps)
    normed = (out - mean) * inv_std * _vector(scale) + _vector(bias)
    shape = running_mean.shape
    return normed, dict(zip(names, (mean.reshape(shape).astype(stats), inv_std.reshape(shape).astype(stats),
                                    new_mean, new_var)))


def batch_norm_grad(k, g, out, slots: tuple[str, str, str, str]) -> tuple:
    """(d out, d scale, d bias) of BN at g (NCHW); slots: the conv output's saved mean and inverse std, scale, bias."""
    mean_slot, inv_slot, scale_slot, _ = slots
    inv_std, scale = _vector(k.x(inv_slot)), k.x(scale_slot)
    xhat = (out - _vector(k.x(mean_slot))) * inv_std
    scaled = g * _vector(scale)
    d_out = scaled * inv_std if _frozen(k) else norm_grad(xhat, scaled, inv_std, AXES)
    return (d_out, (g * xhat).sum(axis=AXES).reshape(scale.shape).astype(scale.dtype),
            g.sum(axis=AXES).reshape(scale.shape).astype(scale.dtype))


def _oihw(w):
    return np.moveaxis(w.reshape(krsc_filter(list(w.shape))).astype(np.float64), -1, 1)


def _unit_branch(k, data: str, stride: str):
    filter_slot, scale_slot, bias_slot, mean_slot, var_slot = BRANCHES[data]
    x, w = np.moveaxis(k.x(data).astype(np.float64), -1, 1), _oihw(k.x(filter_slot))
    if x.shape[1] != w.shape[1] * k.attr("group"):
        raise ValueError(f"{filter_slot} {list(k.x(filter_slot).shape)} (KRSC, group {k.attr('group')}) does not fit "
                         f"{data}'s {x.shape[1]} channels")
    out = conv(x, w, _geometry(k, stride))
    conv_slot, *names = OUTPUTS[data]
    normed, results = batch_norm(k, out, (scale_slot, bias_slot, mean_slot, var_slot), tuple(names), cudnn=True)
    return normed, results | {conv_slot: np.moveaxis(out, 1, -1).astype(k.x(data).dtype)}


@kernel("resnet_unit")
def resnet_unit(k):
    total, results = _unit_branch(k, "X", "stride")
    if k.attr("has_shortcut"):
        shortcut, more = _unit_branch(k, "Z", "stride_z")
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


def _unit_branch_grad(k, data: str, stride: str, g) -> dict:
    filter_slot, scale_slot, bias_slot = BRANCHES[data][:3]
    conv_slot, saved_mean, saved_inv = OUTPUTS[data][:3]
    out = np.moveaxis(k.x(conv_slot).astype(np.float64), -1, 1)
    d_out, d_scale, d_bias = batch_norm_grad(k, g, out, (saved_mean, saved_inv, scale_slot, bias_slot))
    x, w_krsc = k.x(data), k.x(filter_slot)
    w, geo = _oihw(w_krsc), _geometry(k, stride)
    x_nchw = np.moveaxis(x.astype(np.float64), -1, 1)
    return {f"{data}@GRAD": lambda: np.moveaxis(conv_input_grad(d_out, w, x_nchw.shape[2:], geo), 1, -1).astype(
                x.dtype),
            f"{filter_slot}@GRAD": lambda: np.moveaxis(conv_filter_grad(x_nchw, d_out, w.shape, geo), 1, -1).reshape(
                w_krsc.shape).astype(w_krsc.dtype),
            f"{scale_slot}@GRAD": lambda: d_scale, f"{bias_slot}@GRAD": lambda: d_bias}


@kernel("resnet_unit_grad")
def resnet_unit_grad(k):
    """g = dY where Y > 0; each branch's batch-norm grad (the frozen-statistics one with is_test or
    use_global_stats) then conv2d's grads; with fuse_add, Z@GRAD = g."""
    y = k.x("Y")
    g = np.moveaxis(np.where(y > 0, k.x("Y@GRAD"), 0).astype(np.float64), -1, 1)
    makers = _unit_branch_grad(k, "X", "stride", g)
    if k.attr("has_shortcut"):
        makers |= _unit_branch_grad(k, "Z", "stride_z", g)
    elif k.attr("fuse_add"):
        makers["Z@GRAD"] = lambda: np.moveaxis(g, 1, -1).astype(y.dtype)
    return k.grads(makers)


def _basic_conv(k, x, branch: str):
    """conv2d of branch 1, 2 or 3 of resnet_basic_block (NCHW, OIHW)."""
    w = k.x(f"Filter{branch}").astype(np.float64)
    if x.shape[1] != w.shape[1] * k.attr("group"):
        raise ValueError(f"Filter{branch} {list(w.shape)} (group {k.attr('group')}) does not fit an input of "
                         f"{x.shape[1]} channels")
    return conv(x, w, _geometry(k, f"stride{branch}", f"padding{branch}", f"dilation{branch}"))


def _finds(k, branch: str, x) -> dict:
    """MaxInput / MaxFilter: XPU's findmax buffers of 6, here each slot the largest |value|."""
    if not k.attr("find_conv_input_max"):
        return {}
    return {f"MaxInput{branch}": np.full(6, np.abs(x).max(initial=0), np.float32),
            f"MaxFilter{branch}": np.full(6, np.abs(k.x(f"Filter{branch}")).max(initial=0), np.float32)}


@kernel("resnet_basic_block")
def resnet_basic_block(k):
    x = k.x("X")
    wide, dtype = x.astype(np.float64), x.dtype
    conv1 = _basic_conv(k, wide, "1")
    normed1, results = batch_norm(k, conv1, *BASIC_BRANCHES["1"])
    hidden = np.maximum(normed1, 0)
    conv2 = _basic_conv(k, hidden, "2")
    normed2, more = batch_norm(k, conv2, *BASIC_BRANCHES["2"])
    results |= more | _finds(k, "1", x) | _finds(k, "2", hidden)
    shortcut = wide
    if k.attr("has_shortcut"):
        conv3 = _basic_conv(k, wide, "3")
        shortcut, more = batch_norm(k, conv3, *BASIC_BRANCHES["3"])
        results |= more | {"Conv3": conv3.astype(dtype)} | _finds(k, "3", x)
    if shortcut.shape != normed2.shape:
        raise ValueError(f"the shortcut {list(shortcut.shape)} must match the second conv's output "
                         f"{list(normed2.shape)}")
    return results | {"Y": np.maximum(normed2 + shortcut, 0).astype(dtype), "Conv1": conv1.astype(dtype),
                      "Conv2Input": hidden.astype(dtype), "Conv2": conv2.astype(dtype)}


def _basic_branch_grad(k, g, branch: str, x) -> tuple:
    """(d input, {grads of the filter, scale and bias}) of conv -> BN branch ``branch`` at g."""
    out = k.x(f"Conv{branch}").astype(np.float64)
    d_out, d_scale, d_bias = batch_norm_grad(k, g, out, (f"SavedMean{branch}", f"SavedInvstd{branch}",
                                                         f"Scale{branch}", f"Bias{branch}"))
    w = k.x(f"Filter{branch}")
    geo = _geometry(k, f"stride{branch}", f"padding{branch}", f"dilation{branch}")
    d_filter = conv_filter_grad(x, d_out, w.shape, geo).astype(w.dtype)
    return conv_input_grad(d_out, w.astype(np.float64), x.shape[2:], geo), {
        f"Filter{branch}@GRAD": d_filter, f"Scale{branch}@GRAD": d_scale, f"Bias{branch}@GRAD": d_bias}


@kernel("resnet_basic_block_grad")
def resnet_basic_block_grad(k):
    """g = dY where Y > 0 through BN2, conv2, relu, BN1 and conv1, plus the shortcut's (BN3, conv3) or g itself."""
    x, y = k.x("X"), k.x("Y")
    wide = x.astype(np.float64)
    g = np.where(y > 0, k.x("Y@GRAD"), 0).astype(np.float64)
    hidden = k.x("Conv2Input").astype(np.float64)
    d_hidden, grads = _basic_branch_grad(k, g, "2", hidden)
    d_x, more = _basic_branch_grad(k, np.where(hidden > 0, d_hidden, 0), "1", wide)
    grads |= more
    if k.attr("has_shortcut"):
        d_shortcut, more = _basic_branch_grad(k, g, "3", wide)
        d_x, grads = d_x + d_shortcut, grads | more
    else:
        d_x = d_x + g
    grads["X@GRAD"] = d_x.astype(x.dtype)
    return k.grads({slot: (lambda value=value: value) for slot, value in grads.items()})
