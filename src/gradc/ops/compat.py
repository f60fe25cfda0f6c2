"""Ops Paddle 3's public APIs write only in PIR mode (docs/pir-sweep.md, "paddle.compat and other API branches"):
paddle.compat's max / min along a dim (max_with_index, min_with_index: values and the index of the first extreme)
and slogdet (slogdet_v2: sign and log|det| as two results), F.embedding with scale_grad_by_freq
(embedding_with_scaled_gradient) and paddle.amp.debugging's layer check (enable_check_model_nan_inf /
disable_check_model_nan_inf: the value unchanged; gradc checks no flag). Slots carry Paddle's PIR names. Gradients:

    max/min_with_index: dx = dvalues at the index along dim, zero elsewhere
    slogdet_v2: dx = dlogdet A^-T (the sign is piecewise constant)
    embedding_with_scaled_gradient: dweight[r] = sum of dout over the ids equal to r, divided by their count
                                    (none for padding_idx)
    enable/disable_check_model_nan_inf: dx = dout
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import defop, grad_op, typed
from .infer import check_float
from .linalg import matrices

INDEX_DTYPES = (VarType.INT32, VarType.INT64)


def _with_index_infer(ctx):
    x, keep = ctx.shape("x"), ctx.attr("keepdim")
    check_float(ctx, "x")
    if ctx.attr("flatten"):
        ctx.fail("flatten=True is not supported: paddle.compat's max and min pass flatten=False")
    if x is None or ctx.has("DimTensor"):   # the dim a tensor holds is known at run time only
        return {"values": (None, ctx.dtype("x")), "indices": (None, VarType.INT64)}
    if not x:
        ctx.fail(f"{ctx.op.type} needs x of rank >= 1, got a 0-d tensor")
    axis = ctx.axis(ctx.attr("dim"), len(x))
    shape = [1 if i == axis else d for i, d in enumerate(x)] if keep else x[:axis] + x[axis + 1:]
    return {"values": (shape, ctx.dtype("x")), "indices": (shape, VarType.INT64)}


for _extreme in ("max_with_index", "min_with_index"):
    defop(_extreme, ["x", "DimTensor?"], ["values", "indices"],
          attrs={"dim": typed(0, AttrType.LONG), "keepdim": False, "flatten": False},
          no_grad_inputs=["DimTensor"], no_grad_outputs=["indices"],
          infer=_with_index_infer, grad=grad_op("x", "values", "indices", "DimTensor"),
          kernel_dtype_outputs=["indices"])


def _slogdet_infer(ctx):
    check_float(ctx, "x")
    batch = matrices(ctx, "x", square=True)[:-2]
    return {"sign": (batch, ctx.dtype("x")), "logdet": (batch, ctx.dtype("x"))}


defop("slogdet_v2", ["x"], ["sign", "logdet"], infer=_slogdet_infer, grad=grad_op("x", "sign", "logdet"))


def _scaled_embedding_infer(ctx):
    weight, ids = ctx.shape("weight"), ctx.shape("x")
    check_float(ctx, "weight")
    if ctx.dtype("x") not in (None, *INDEX_DTYPES):
        ctx.fail("embedding_with_scaled_gradient needs int32 or int64 ids x")
    if weight is not None and len(weight) != 2:
        ctx.fail(f"embedding_with_scaled_gradient needs a 2-D table weight, got shape {weight}")
    shape = None if ids is None or weight is None else [*ids, weight[1]]
    return {"out": (shape, ctx.dtype("weight"))}


defop("embedding_with_scaled_gradient", ["x", "weight"], ["out"], attrs={"padding_idx": typed(-1, AttrType.LONG)},
      no_grad_inputs=["x"], infer=_scaled_embedding_infer, grad=grad_op("x", "weight"))


def _unchanged(ctx):
    return {"out": (ctx.shape("x"), ctx.dtype("x"))}


def _nan_inf_grad(g):
    """Paddle's grad op reads dout only and carries the flag to set on the way back (unsetflag = 1 - flag)."""
    return [g.op(f"{g.fwd.type}_grad", {"out@GRAD": g.OG("out")}, {"x@GRAD": g.IG("x")},
                 {"unsetflag": 1 - g.attr("flag")})]


# their grad ops are defined in gradc.ops.compat_double, with their own second derivative
for _check, _flag in (("enable_check_model_nan_inf", 1), ("disable_check_model_nan_inf", 0)):
    defop(_check, ["x"], ["out"], attrs={"flag": _flag}, infer=_unchanged, grad=_nan_inf_grad)
