"""Comparisons, logical ops and the loop counter: bool or integer results, so no gradient."""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop
from .infer import broadcast_shapes, same_as

COMPARE_ATTRS = {"axis": -1, "force_cpu": False}


def _compare_infer(ctx):
    return {"Out": (broadcast_shapes(ctx, ctx.shape("X"), ctx.shape("Y"), ctx.attr("axis")), VarType.BOOL)}


def _logical_infer(ctx):
    y = ctx.shape("Y") if ctx.has("Y") else ctx.shape("X")
    return {"Out": (broadcast_shapes(ctx, ctx.shape("X"), y), VarType.BOOL)}


for _name in ("less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal"):
    defop(_name, ["X", "Y"], attrs=COMPARE_ATTRS, infer=_compare_infer, grad=NO_GRAD)
for _name in ("logical_and", "logical_or", "logical_xor"):
    defop(_name, ["X", "Y"], infer=_logical_infer, grad=NO_GRAD)
defop("logical_not", ["X"], infer=_logical_infer, grad=NO_GRAD)
defop("increment", ["X"], attrs={"step": 1.0}, infer=same_as("X"), grad=NO_GRAD)
