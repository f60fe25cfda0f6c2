"""Kernels of gradc.ops.gpu_build: linear_v2, var, std, nansum and the depthwise convolutions with a bias, and their
grads. var and std work in float64 inside; their divisor is max(n - correction, 0), as torch's (Paddle 3.3.1 gives 0
where correction exceeds n, while its grad divides by the negative n - correction: docs/gpu-build.md)."""

from __future__ import annotations

import numpy as np

from ...ir.types import DTYPE_BY_NUMPY_NAME
from ...ops import conv as conv_ops
from ...ops.gpu_build import CONV_BIAS_OPS, as_reduce
from ...ops.reduce import reduced_axes, sum_dtype
from . import kernel
from .conv import channels_back, channels_first, conv, conv_filter_grad, conv_input_grad
from .conv_columns import Geometry
from .tensor import numpy_dtype


def _axes(k, x) -> tuple[int, ...]:
    return reduced_axes(as_reduce(k.attr), x.ndim)


def _kept(k, value, x, axes):
    """An output (grad) with the reduced axes back as 1s, to broadcast against x."""
    return value if k.attr("keepdim") or not axes else np.expand_dims(value, axes)


def _centred(k):
    """(x in float64 minus its mean over the axes, the axes, the divisor max(n - correction, 0))."""
    x = k.x("x")
    axes = _axes(k, x)
    wide = x.astype(np.float64)
    count = int(np.prod([x.shape[a] for a in axes]))
    return wide - wide.mean(axis=axes, keepdims=True), axes, max(count - k.attr("correction"), 0.0)


def _variance(k):
    diff, axes, divisor = _centred(k)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sum(diff * diff, axis=axes, keepdims=k.attr("keepdim")) / divisor


kernel("var")(lambda k: {"out": _variance(k).astype(k.x("x").dtype)})
kernel("std")(lambda k: {"out": np.sqrt(_variance(k)).astype(k.x("x").dtype)})


def _var_grad(k, dvar):
    """2 (x - mean) dvar / divisor."""
    diff, axes, divisor = _centred(k)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (2.0 * diff * _kept(k, dvar, diff, axes) / divisor).astype(k.x("x").dtype)


@kernel("var_grad")
def var_grad(k):
    return {"x@GRAD": _var_grad(k, k.x("out@GRAD").astype(np.float64))}


@kernel("std_grad")
def std_grad(k):
    """d std = d var / (2 std), 0 where std is 0 (Paddle's choice at a constant x)."""
    out, dout = (k.x(slot).astype(np.float64) for slot in ("out", "out@GRAD"))
    with np.errstate(divide="ignore", invalid="ignore"):
        dvar = np.where(out == 0, 0.0, dout / (2.0 * out))
    return {"x@GRAD": _var_grad(k, dvar)}


def _nansum_axes(k, x) -> tuple[int, ...]:
    """axis, or the axes of AxisTensor / AxisTensorList when given."""
    tensors = [k.optional("AxisTensor")] if k.has("AxisTensor") else k.xs("AxisTensorList")
    if not tensors:
        return _axes(k, x)
    dims = [int(d) for t in tensors for d in np.asarray(t).reshape(-1)]
    return reduced_axes(lambda name: dims if name == "dim" else False, x.ndim)


@kernel("nansum")
def nansum(k):
    x = k.x("x")
    dtype = numpy_dtype(sum_dtype(DTYPE_BY_NUMPY_NAME[x.dtype.name], k.attr("dtype")))
    kept = np.where(np.isnan(x), 0, x) if x.dtype.kind in "fc" else x
    return {"out": np.sum(kept, axis=_nansum_axes(k, x), keepdims=k.attr("keepdim"), dtype=dtype)}


@kernel("nansum_grad")
def nansum_grad(k):
    """dOut spread over the reduced axes, 0 at x's NaNs."""
    x = k.x("x")
    axes = _nansum_axes(k, x)
    spread = np.broadcast_to(_kept(k, k.x("out@GRAD"), x, axes), x.shape)
    return {"x@GRAD": np.where(np.isnan(x), 0, spread).astype(x.dtype)}


def _weight(k):
    """W [K, N] of out = input @ W + bias."""
    weight = k.x("weight")
    return weight.T if k.attr("transpose_weight") else weight


@kernel("linear_v2")
def linear_v2(k):
    x, bias = k.x("input"), k.x("bias")
    return {"out": (np.matmul(x, _weight(k)) + bias).astype(x.dtype)}


@kernel("linear_v2_grad")
def linear_v2_grad(k):
    x, bias, dout = k.x("input"), k.x("bias"), k.x("out@GRAD")
    rows, drows = x.reshape(-1, x.shape[-1]), dout.reshape(-1, dout.shape[-1])

    def dweight():
        return (drows.T @ rows) if k.attr("transpose_weight") else (rows.T @ drows)

    def dbias():   # a bias of one value took every column
        summed = drows.sum(axis=0)
        return (summed if bias.size == summed.size else summed.sum(keepdims=True)).reshape(bias.shape)
    return k.grads({"input@GRAD": lambda: np.matmul(dout, _weight(k).T).astype(x.dtype), "weight@GRAD": dweight,
                    "bias@GRAD": dbias})


def _conv_bias_args(k, dims: int):
    """(channels last, input and filter channels first, the geometry, the bias or None)."""
    last = conv_ops.channel_last(k.attr("data_format"))
    x, w = channels_first(k.x("input"), last, dims), channels_first(k.x("filter"), False, dims)
    if k.attr("groups") < 1 or x.shape[1] != w.shape[1] * k.attr("groups") or w.shape[0] % k.attr("groups"):
        raise ValueError(f"input has {x.shape[1]} channels, which filter {list(w.shape)} with "
                         f"groups={k.attr('groups')} does not fit")
    pads, dils = conv_ops.resolve_padding(x.shape[2:], w.shape[2:], k.attr("strides"), k.attr("paddings"),
                                          k.attr("dilations"), k.attr("padding_algorithm"))
    geo = Geometry(tuple(k.attr("strides")), tuple(pads), tuple(dils), k.attr("groups"))
    conv_ops.conv_out_sizes(x.shape[2:], w.shape[2:], geo.strides, geo.pads, geo.dilations)   # raises if it misfits
    return last, x, w, geo, k.optional("bias")


def _conv_bias_kernels(name: str, dims: int) -> None:
    @kernel(name)
    def forward(k):
        last, x, w, geo, bias = _conv_bias_args(k, dims)
        out = conv(x, w, geo)
        if bias is not None:
            out = out + bias.reshape(1, -1, *[1] * dims).astype(out.dtype)
        return {"out": channels_back(out, last)}

    @kernel(name + "_grad")
    def backward(k):
        last, x, w, geo, bias = _conv_bias_args(k, dims)
        dy = channels_first(k.x("out@GRAD"), last, dims)
        return k.grads({"input@GRAD": lambda: channels_back(conv_input_grad(dy, w, x.shape[2:], geo), last),
                        "filter@GRAD": lambda: conv_filter_grad(x, dy, w.shape, geo),
                        "bias@GRAD": lambda: dy.sum(axis=(0, *range(2, dims + 2))).reshape(bias.shape)})


for _name, _dims in CONV_BIAS_OPS.items():
    _conv_bias_kernels(_name, _dims)
