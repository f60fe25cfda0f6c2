"""Creating and copying tensors: constants, random initialisers, assign, cast."""

from __future__ import annotations

from ..ir import DIFFERENTIABLE_DTYPES, AttrType, VarType
from ..ir.types import TENSOR_DTYPES
from ..registry import NO_GRAD, defop, typed
from ..shapes import numel
from .infer import same_as
from .shape import runtime_dims

FILL_ATTRS = {"shape": typed([], AttrType.LONGS), "place_type": -1, "value": 0.0, "str_value": "", "dtype": 5,
              "force_cpu": False}



def created_dims(ctx, tensor_first: bool) -> list[int] | None:
    """The dims of a created tensor. fill_constant takes ShapeTensor, then ShapeTensorList, then `shape`;
    uniform/gaussian_random take ShapeTensorList, then a non-empty `shape`, then ShapeTensor."""
    shape = list(ctx.attr("shape"))
    if ctx.has("ShapeTensorList") and not (tensor_first and ctx.has("ShapeTensor")):
        return [-1] * len(ctx.op.input("ShapeTensorList"))
    if ctx.has("ShapeTensor") and (tensor_first or not shape):
        return runtime_dims(ctx, "ShapeTensor", "ShapeTensorList")
    if any(d < 0 for d in shape):
        ctx.fail(f"{ctx.op.type} shape {shape} has a negative dim")
    return shape


defop("fill_constant", ["ShapeTensor?", "ShapeTensorList[]?", "ValueTensor?"], attrs=FILL_ATTRS,
      infer=lambda ctx: {"Out": (created_dims(ctx, tensor_first=True), ctx.attr("dtype"))}, grad=NO_GRAD)
def _fill_any_like_infer(ctx):
    dtype = ctx.attr("dtype")
    if dtype != -1 and dtype not in TENSOR_DTYPES:
        ctx.fail(f"dtype {dtype} is neither -1 (X's) nor a tensor data type gradc knows")
    return {"Out": (ctx.shape("X"), ctx.dtype("X") if dtype == -1 else dtype)}


defop("fill_any_like", ["X"], attrs={"value": 0.0, "dtype": -1}, infer=_fill_any_like_infer, grad=NO_GRAD,
      tensor_attrs=["value"])
defop("fill_zeros_like", ["X"], infer=same_as("X"), grad=NO_GRAD)
# Paddle's shape op: X's dims as an int32 vector (a loop bound, a reshape target)
defop("shape", ["Input"], infer=lambda ctx: {"Out": ([len(ctx.shape("Input"))], VarType.INT32)}, grad=NO_GRAD)
# Paddle's size op: X's element count as an int64 0-d tensor (paddle.numel; paddle.expand with a tensor shape)
defop("size", ["Input"], infer=lambda ctx: {"Out": ([], VarType.INT64)}, grad=NO_GRAD)



def _uniform_infer(ctx):
    dims = created_dims(ctx, tensor_first=False)
    if ctx.attr("min") > ctx.attr("max"):
        ctx.fail(f"uniform_random min {ctx.attr('min')} is above max {ctx.attr('max')}")
    count, step = ctx.attr("diag_num"), ctx.attr("diag_step")
    last = (count - 1) * (step + 1)  # diag_num values go at flat positions i * (diag_step + 1)
    if count < 0 or step < 0 or (count > 0 and dims is not None and 0 <= numel(dims) <= last):
        ctx.fail(f"uniform_random diag_num {count} with diag_step {step} does not fit a tensor of dims {dims}")
    return {"Out": (dims, ctx.attr("dtype"))}


def _gaussian_infer(ctx):
    if ctx.attr("std") < 0:
        ctx.fail(f"gaussian_random std {ctx.attr('std')} is negative")
    return {"Out": (created_dims(ctx, tensor_first=False), ctx.attr("dtype"))}


defop("uniform_random", ["ShapeTensor?", "ShapeTensorList[]?"],
      attrs={"shape": typed([], AttrType.LONGS), "min": -1.0, "max": 1.0, "seed": 0, "dtype": 5, "diag_num": 0,
             "diag_step": 0, "diag_val": 1.0},
      infer=_uniform_infer, grad=NO_GRAD, tensor_attrs=["min", "max"])
defop("gaussian_random", ["ShapeTensor?", "ShapeTensorList[]?"],
      attrs={"shape": typed([], AttrType.LONGS), "mean": 0.0, "std": 1.0, "seed": 0, "dtype": 5},
      infer=_gaussian_infer, grad=NO_GRAD)

# empty's memory is uninitialised in Paddle: gradc fills zeros
defop("empty", ["ShapeTensor?", "ShapeTensorList[]?"], attrs={"shape": typed([], AttrType.LONGS), "dtype": 5},
      infer=lambda ctx: {"Out": (created_dims(ctx, tensor_first=True), ctx.attr("dtype"))}, grad=NO_GRAD)


def _randint_infer(ctx):
    if ctx.attr("low") >= ctx.attr("high"):
        ctx.fail(f"randint needs low < high, got low {ctx.attr('low')} and high {ctx.attr('high')}")
    return {"Out": (created_dims(ctx, tensor_first=False), ctx.attr("dtype"))}


def _randperm_infer(ctx):
    if ctx.attr("n") < 0:
        ctx.fail(f"randperm needs n >= 0, got {ctx.attr('n')}")
    return {"Out": ([ctx.attr("n")], ctx.attr("dtype"))}


defop("randint", ["ShapeTensor?", "ShapeTensorList[]?"],
      attrs={"shape": typed([], AttrType.LONGS), "low": 0, "high": 1, "seed": 0, "dtype": 3},
      infer=_randint_infer, grad=NO_GRAD)
defop("randperm", [], attrs={"n": 0, "dtype": 3}, infer=_randperm_infer, grad=NO_GRAD)


def _assign_grad(g):
    return [g.op("assign", {"X": g.OG("Out")}, {"Out": g.IG("X")})]


defop("assign", ["X?"], infer=same_as("X"), grad=_assign_grad)
# Variable.detach() (pd_op.share_data_ in PIR): Out holds X's values, and no gradient flows back through it
defop("share_data", ["X"], infer=same_as("X"), grad=NO_GRAD)


def _cast_grad(g):
    """Cast the grad back to the input's type (a complex grad to a real input: its real part, dL/dRe); integer
    sides carry no gradient."""
    if g.attr("in_dtype") not in DIFFERENTIABLE_DTYPES or g.attr("out_dtype") not in DIFFERENTIABLE_DTYPES:
        return []
    return [g.op("cast", {"X": g.OG("Out")}, {"Out": g.IG("X")},
                 {"in_dtype": g.attr("out_dtype"), "out_dtype": g.attr("in_dtype")})]


def _cast_infer(ctx):
    # bfloat16 compiles (an AMP program's casts) though no kernel runs it: numpy has no bfloat16
    if ctx.attr("out_dtype") not in TENSOR_DTYPES:
        ctx.fail(f"out_dtype {ctx.attr('out_dtype')} is not a tensor data type gradc knows")
    return {"Out": (ctx.shape("X"), ctx.attr("out_dtype"))}


defop("cast", ["X"], attrs={"in_dtype": 5, "out_dtype": 5}, infer=_cast_infer, grad=_cast_grad)
