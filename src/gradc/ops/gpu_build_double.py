"""Second derivatives of gradc.ops.gpu_build's grad ops: each written again with differentiable ops and differentiated
(``expansion``), so third derivatives follow.

- var_grad: x@GRAD = 2 (x - mean(x)) dOut / max(n - correction, 0), n from x's declared shape, or read at run time
  (size(x) / size(mean)) where x's sizes or rank are not declared;
- std_grad: the same with dOut / (2 out) for dOut, 0 where out is 0 (``where`` keeps the zero's grads 0 too);
- nansum_grad: dOut spread over the reduced axes, 0 at x's NaNs (``where`` on isnan_v2); with its axes in AxisTensor,
  its adjoint (nansum over them of ddX, 0 at x's NaNs), as it is linear in dOut;
- linear_v2_grad: input@GRAD = dOut W^T, W's grad rows^T dOut (rows: input as [-1, K]), bias@GRAD dOut's column sums;
- depthwise_conv2d_bias_grad / depthwise_conv3d_bias_grad: depthwise_conv2d_grad / conv3d_grad for input and filter,
  bias@GRAD dOut summed over every dim but the channels.
"""

from __future__ import annotations

from math import prod

from ..ir import VarType
from ..registry import defgrad
from . import gpu_build
from .composite import Formula, expansion, first
from .reduce import reduced_axes
from .reduced_dims import reduced_dims_back


def _spread(f, g, value: str, x: str) -> str:
    """``value`` (a reduced output's shape) with the reduced dims back as 1s."""
    return reduced_dims_back(f, g, value, x, gpu_build.as_reduce(g.attr))


def _var_formula(f, g, dvar: str) -> str:
    x, shape = first(g.I("x")), g.shape(first(g.I("x")))
    dims = list(g.attr("axis") or [])
    axes = reduced_axes(gpu_build.as_reduce(g.attr), len(shape)) if shape is not None else ()
    mean = f.op("reduce_mean", {"X": x}, x, {"dim": dims or [0], "keep_dim": True, "reduce_all": not dims},
                dims=lambda s: [1 if i in axes else d for i, d in enumerate(s)])
    weighted = f.mul(f.sub(x, mean, x), _spread(f, g, dvar, x), x)
    if shape is not None and min(shape, default=0) >= 0:
        divisor = max(prod(shape[a] for a in axes) - g.attr("correction"), 0.0)
        return f.scale(weighted, 2.0 / divisor if divisor else float("inf"))
    return f.mul(weighted, _run_time_factor(f, g, x, mean), x)


def _run_time_factor(f, g, x: str, mean: str) -> str:
    """2 / max(n - correction, 0) with n, the count each mean is taken over, read at run time: size(x) / size(mean)."""
    dtype = int(g.block.find_var(x).dtype)

    def count(v):
        size = f.op("size", {"Input": v}, v, dims=lambda s: [], dtype=VarType.INT64)
        return f.op("cast", {"X": size}, size, {"in_dtype": int(VarType.INT64), "out_dtype": dtype}, dtype=dtype)
    divisor = f.unary("relu", f.scale(f.div(count(x), count(mean), count(x)), 1.0, -g.attr("correction")))
    return f.div(f.fill_like(divisor, 2.0), divisor, divisor)


@expansion
def _var_again(f, g):
    return {"x@GRAD": _var_formula(f, g, first(g.I("out@GRAD")))}


@expansion
def _std_again(f, g):
    out, dout = first(g.I("out")), first(g.I("out@GRAD"))
    zeros = f.fill_like(out, 0.0)
    at_zero = f.op("equal", {"X": out, "Y": zeros}, out, {"axis": -1}, dtype=VarType.BOOL)
    safe = f.op("where", {"Condition": at_zero, "X": f.fill_like(out, 1.0), "Y": out}, out)
    dvar = f.op("where", {"Condition": at_zero, "X": zeros, "Y": f.div(dout, f.scale(safe, 2.0), out)}, out)
    return {"x@GRAD": _var_formula(f, g, dvar)}


@expansion
def _nansum_again(f, g):
    x, dout = first(g.I("x")), first(g.I("out@GRAD"))
    zeros = f.fill_like(x, 0.0)
    spread = f.add(zeros, _spread(f, g, dout, x), x)
    nan = f.op("isnan_v2", {"X": x}, x, dtype=VarType.BOOL)
    return {"x@GRAD": f.op("where", {"Condition": nan, "X": zeros, "Y": spread}, x)}


def _nansum_by_axis_tensor(g) -> list:
    """nansum_grad with its axes in AxisTensor(List), known at run time only: it is linear in dOut and flat in x
    (0 at x's NaNs), so d/d(dOut) is its adjoint, nansum over the same axes of ddX zeroed at x's NaNs."""
    f = Formula(g)
    x, ddx = first(g.I("x")), first(g.OG("x@GRAD"))
    if ddx is not None:
        nan = f.op("isnan_v2", {"X": x}, x, dtype=VarType.BOOL)
        masked = f.op("where", {"Condition": nan, "X": f.fill_like(x, 0.0), "Y": ddx}, x)
        f.into(first(g.IG("out@GRAD")), "nansum", {"x": masked, "AxisTensor": g.I("AxisTensor"),
                                                   "AxisTensorList": g.I("AxisTensorList")},
               {name: g.attr(name) for name in gpu_build.NANSUM_ATTRS}, slot="out")
    return f.ops


def _nansum_grad_again(g) -> list:
    return _nansum_by_axis_tensor(g) if g.I("AxisTensor") or g.I("AxisTensorList") else _nansum_again(g)


@expansion
def _linear_again(f, g):
    x, weight, bias, dout = (first(g.I(slot)) for slot in ("input", "weight", "bias", "out@GRAD"))
    transposed = g.attr("transpose_weight")
    dx = f.op("matmul_v2", {"X": dout, "Y": weight}, x, {"trans_x": False, "trans_y": not transposed})

    def rows(v):
        if len(g.shape(v)) == 2:
            return v
        return f.op("reshape2", {"X": v}, v, {"shape": [-1, g.shape(v)[-1]]}, more={"XShape": f.xshape(v)},
                    dims=lambda s: [-1, s[-1]])
    x_rows, dout_rows = rows(x), rows(dout)
    pair = {"X": dout_rows, "Y": x_rows} if transposed else {"X": x_rows, "Y": dout_rows}
    dweight = f.op("matmul_v2", pair, weight, {"trans_x": True, "trans_y": False})
    columns = f.op("reduce_sum", {"X": dout_rows}, dout_rows, {"dim": [0], "keep_dim": False, "reduce_all": False},
                   dims=lambda s: s[1:])
    bias_shape, width = g.shape(bias), g.shape(dout)[-1]
    dbias = columns if bias_shape == [width] else f.summed_like(columns, bias)
    return {"input@GRAD": dx, "weight@GRAD": dweight, "bias@GRAD": dbias}


@expansion
def _conv_bias_again(f, g):
    x, filt, dout = first(g.I("input")), first(g.I("filter")), first(g.I("out@GRAD"))
    plain = {"depthwise_conv2d_bias_grad": "depthwise_conv2d_grad", "depthwise_conv3d_bias_grad": "conv3d_grad"}
    dx, dfilter = g.tmp(x), g.tmp(filt)
    f.emit(plain[g.fwd.type], {"Input": x, "Filter": filt, "Output@GRAD": dout},
           {"Input@GRAD": dx, "Filter@GRAD": dfilter}, same=True)
    results = {"input@GRAD": dx, "filter@GRAD": dfilter}
    bias = first(g.I("bias"))
    if bias is not None:
        rank = len(g.shape(dout))
        channel = 1 if g.attr("data_format") in ("NCHW", "NCDHW") else rank - 1
        results["bias@GRAD"] = f.reduce("reduce_sum", dout, [d for d in range(rank) if d != channel], bias)
    return results


defgrad("var_grad", grad=_var_again)
defgrad("std_grad", grad=_std_again)
defgrad("nansum_grad", grad=_nansum_grad_again, no_grad_inputs=["AxisTensor", "AxisTensorList"])
defgrad("linear_v2_grad", grad=_linear_again)
for _name in gpu_build.CONV_BIAS_OPS:
    defgrad(f"{_name}_grad", grad=_conv_bias_again)
