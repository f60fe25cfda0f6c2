"""Comparisons, logical ops, reduce_all/reduce_any, assert and the loop counter. Bool results have no
gradient; increment's is the identity."""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import NO_GRAD, defop, typed
from ..shapes import dims_match, numel
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


def _increment_grad(g):
    """d(x + step)/dx = 1. Paddle's maker emits an increment by -step from Out back to X: it restores the
    forward value and gives X no gradient."""
    return [g.op("scale", {"X": g.OG("Out")}, {"Out": g.IG("X")}, {"scale": 1.0, "bias": 0.0})]


def _increment_infer(ctx):
    if not dims_match(numel(ctx.shape("X")), 1):
        ctx.fail(f"increment takes a tensor of one element, got shape {ctx.shape('X')}")
    return same_as("X")(ctx)


# The loop counter: Out = X + step (step cast to an integer X's dtype, as Paddle does)
defop("increment", ["X"], attrs={"step": 1.0}, infer=_increment_infer, grad=_increment_grad)


def _assert_infer(ctx):
    if not dims_match(numel(ctx.shape("Cond")), 1):
        ctx.fail(f"Cond must hold one bool, but has shape {ctx.shape('Cond')}")
    return {}


# Stops the run when Cond is false, showing the first `summarize` values (-1: all) of each Data var
defop("assert", ["Cond", "Data[]"], [], attrs={"summarize": typed(-1, AttrType.LONG)}, infer=_assert_infer,
      grad=NO_GRAD)
