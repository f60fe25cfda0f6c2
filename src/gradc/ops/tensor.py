"""Creating and copying tensors: constants, random initialisers, assign, cast."""

from __future__ import annotations

from ..ir import FLOAT_DTYPES, AttrType, VarType
from ..registry import NO_GRAD, defop, typed
from .infer import same_as

FILL_ATTRS = {"shape": typed([], AttrType.LONGS), "place_type": -1, "value": 0.0, "str_value": "", "dtype": 5,
              "force_cpu": False}

defop("fill_constant", ["ShapeTensor?", "ShapeTensorList[]?", "ValueTensor?"], attrs=FILL_ATTRS,
      infer=lambda ctx: {"Out": (list(ctx.attr("shape")), ctx.attr("dtype"))}, grad=NO_GRAD)
defop("fill_any_like", ["X"], attrs={"value": 0.0, "dtype": -1},
      infer=lambda ctx: {"Out": (ctx.shape("X"), ctx.dtype("X") if ctx.attr("dtype") == -1 else ctx.attr("dtype"))},
      grad=NO_GRAD)
defop("fill_zeros_like", ["X"], infer=same_as("X"), grad=NO_GRAD)
# Paddle's shape op: X's dims as an int32 vector (a loop bound, a reshape target)
defop("shape", ["Input"], infer=lambda ctx: {"Out": ([len(ctx.shape("Input"))], VarType.INT32)}, grad=NO_GRAD)

_RANDOM_INFER = lambda ctx: {"Out": (list(ctx.attr("shape")), ctx.attr("dtype"))}  # noqa: E731
defop("uniform_random", ["ShapeTensor?", "ShapeTensorList[]?"],
      attrs={"shape": typed([], AttrType.LONGS), "min": -1.0, "max": 1.0, "seed": 0, "dtype": 5, "diag_num": 0,
             "diag_step": 0, "diag_val": 1.0},
      infer=_RANDOM_INFER, grad=NO_GRAD)
defop("gaussian_random", ["ShapeTensor?", "ShapeTensorList[]?"],
      attrs={"shape": typed([], AttrType.LONGS), "mean": 0.0, "std": 1.0, "seed": 0, "dtype": 5},
      infer=_RANDOM_INFER, grad=NO_GRAD)


def _assign_grad(g):
    return [g.op("assign", {"X": g.OG("Out")}, {"Out": g.IG("X")})]


defop("assign", ["X?"], infer=same_as("X"), grad=_assign_grad)


def _cast_grad(g):
    """Cast the grad back to the input's type; integer sides carry no gradient."""
    if g.attr("in_dtype") not in FLOAT_DTYPES or g.attr("out_dtype") not in FLOAT_DTYPES:
        return []
    return [g.op("cast", {"X": g.OG("Out")}, {"Out": g.IG("X")},
                 {"in_dtype": g.attr("out_dtype"), "out_dtype": g.attr("in_dtype")})]


defop("cast", ["X"], attrs={"in_dtype": 5, "out_dtype": 5},
      infer=lambda ctx: {"Out": (ctx.shape("X"), ctx.attr("out_dtype"))}, grad=_cast_grad)
