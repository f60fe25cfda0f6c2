"""The ops Paddle 3.3.1's Python API writes in PIR mode only when it is a CUDA build (docs/gpu-build.md), with the
slots of Paddle's legacy op protos:

    linear_v2(input, weight, bias):  out = input @ W + bias, W = weight^T when transpose_weight (weight [N, K]), else
                                     weight ([K, N]); bias [N] (or [1], or 0-d)       (every nn.Linear with a bias)
    var(x):                          out = sum((x - mean(x))^2) / (n - correction) over axis (an empty axis: all dims),
                                     n the count of the reduced elements
    std(x):                          out = sqrt(var(x))
    nansum(x, AxisTensor?, AxisTensorList[]?):  out = sum(x) over axis, NaNs counted as 0, of dtype (-1: x's,
                                     int64 for bool / int32 x)
    depthwise_conv2d_bias / depthwise_conv3d_bias(input, filter, bias?): depthwise_conv2d / conv3d (groups = input
                                     channels) plus bias [C_out] on the channel dim (the accuracy-compatible kernels)

``unbiased`` is recorded but, as in Paddle's kernels, ``correction`` alone decides the divisor (the Python API sets
it from unbiased). Grad ops carry Paddle's PIR names: var_grad (x, out@GRAD), std_grad (x, out, out@GRAD; 0 where
out is 0, as Paddle), nansum_grad (x, out@GRAD; 0 at NaNs), linear_v2_grad and the conv grads (every forward input
and out@GRAD). Second derivatives: gradc.ops.gpu_build_double.
"""

from __future__ import annotations

from ..ir import AttrType
from ..registry import defop, grad_op, grads_like_inputs, typed
from .conv import conv_attrs, conv_infer
from .infer import check_float, one_dtype
from .reduce import reduce_infer, sum_dtype

STAT_ATTRS = {"axis": typed([], AttrType.LONGS), "keepdim": False, "unbiased": True,
              "correction": typed(1.0, AttrType.FLOAT64)}
NANSUM_ATTRS = {"axis": typed([], AttrType.LONGS), "dtype": -1, "keepdim": False}
CONV_BIAS_OPS = {"depthwise_conv2d_bias": 2, "depthwise_conv3d_bias": 3}


def as_reduce(attrs_of):
    """var / std / nansum's attributes read by the reduce ops' names (an empty axis list folds every dim)."""
    return lambda name: {"dim": lambda: attrs_of("axis"), "keep_dim": lambda: attrs_of("keepdim"),
                         "reduce_all": lambda: False}.get(name, lambda: attrs_of(name))()


class _Renamed:
    """An inference context read through other slot names: the reduce and conv helpers' X / Input / Filter."""

    def __init__(self, ctx, names: dict[str, str]):
        self.ctx, self.names = ctx, names
        self.op, self.fail = ctx.op, ctx.fail

    def shape(self, slot, i=0):
        return self.ctx.shape(self.names.get(slot, slot), i)

    def dtype(self, slot, i=0):
        return self.ctx.dtype(self.names.get(slot, slot), i)

    def has(self, slot):
        return self.ctx.has(self.names.get(slot, slot))

    def attr(self, name):
        return self.ctx.attr(name)


def _stat_infer(ctx):
    check_float(ctx, "x")
    if ctx.shape("x") is None:
        return {"out": (None, ctx.dtype("x"))}
    out, dtype = reduce_infer(_Renamed(ctx, {"X": "x"}), attr=as_reduce(ctx.attr))["Out"]
    return {"out": (out, dtype)}


def _nansum_infer(ctx):
    dtype = sum_dtype(ctx.dtype("x"), ctx.attr("dtype"), ctx.fail) if ctx.dtype("x") is not None else None
    x = ctx.shape("x")
    if x is None:
        return {"out": (None, dtype)}
    if ctx.has("AxisTensor") or ctx.has("AxisTensorList"):   # axes known at run time: keepdim keeps the rank
        return {"out": ([-1] * len(x) if ctx.attr("keepdim") else None, dtype)}
    return {"out": (reduce_infer(_Renamed(ctx, {"X": "x"}), attr=as_reduce(ctx.attr))["Out"][0], dtype)}


def _linear_infer(ctx):
    check_float(ctx, "input")
    dtype = one_dtype(ctx, "input", "weight", "bias")
    x, w, bias = ctx.shape("input"), ctx.shape("weight"), ctx.shape("bias")
    if w is not None and len(w) != 2:
        ctx.fail(f"linear_v2 needs a 2-D weight, got {w}")
    if x is not None and not x:
        ctx.fail("linear_v2 needs an input of rank >= 1, got a 0-d tensor")
    if x is None or w is None:
        return {"out": (None, dtype)}
    k, n = (w[1], w[0]) if ctx.attr("transpose_weight") else (w[0], w[1])
    if x[-1] >= 0 and k >= 0 and x[-1] != k:
        layout = "[N, K] (transpose_weight)" if ctx.attr("transpose_weight") else "[K, N]"
        ctx.fail(f"linear_v2: input's last dim {x[-1]} is not weight {w}'s K (weight is {layout})")
    if bias is not None and (len(bias) > 1 or (bias and bias[0] not in (1, n, -1))):
        ctx.fail(f"linear_v2 needs a bias of shape [{n}], [1] or [], got {bias}")
    return {"out": ([*x[:-1], n], dtype)}


def _conv_bias_infer(dims: int):
    conv_shape = conv_infer(dims)

    def infer(ctx):
        check_float(ctx, "input")
        dtype = one_dtype(ctx, "input", "filter", "bias")
        out, _ = conv_shape(_Renamed(ctx, {"Input": "input", "Filter": "filter"}))["Output"]
        filt, bias = ctx.shape("filter"), ctx.shape("bias") if ctx.has("bias") else None
        channels = out[1] if ctx.attr("data_format") in ("NCHW", "NCDHW") else out[-1]
        if bias is not None and (len(bias) != 1 or bias[0] not in (channels, -1)):
            ctx.fail(f"{ctx.op.type} needs a bias of [{channels}] (filter {filt}'s output channels), got {bias}")
        return {"out": (out, dtype)}
    return infer


defop("linear_v2", ["input", "weight", "bias"], ["out"], attrs={"transpose_weight": False}, infer=_linear_infer,
      grad=grad_op("input", "weight", "bias"))
defop("var", ["x"], ["out"], attrs=STAT_ATTRS, infer=_stat_infer, grad=grad_op("x"))
defop("std", ["x"], ["out"], attrs=STAT_ATTRS, infer=_stat_infer, grad=grad_op("x", "out"))
# Paddle's nansum_grad also carries reduce_all (its kernel derives it from axis again)
defop("nansum_grad", ["x", "AxisTensor?", "AxisTensorList[]?", "out@GRAD"], ["x@GRAD?"],
      attrs={**NANSUM_ATTRS, "reduce_all": False}, infer=grads_like_inputs).grad_op_of = "nansum"
defop("nansum", ["x", "AxisTensor?", "AxisTensorList[]?"], ["out"], attrs=NANSUM_ATTRS, infer=_nansum_infer,
      grad=grad_op("x", "AxisTensor", "AxisTensorList"), no_grad_inputs=["AxisTensor", "AxisTensorList"])
for _name, _dims in CONV_BIAS_OPS.items():
    defop(_name, ["input", "filter", "bias?"], ["out"], attrs=conv_attrs(_dims), infer=_conv_bias_infer(_dims),
          grad=grad_op("input", "filter", "bias"))
