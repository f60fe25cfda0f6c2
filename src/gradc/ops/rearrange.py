"""Ops that move elements within a tensor or mask some of them out: flip, roll, tril_triu, meshgrid.
Each is linear, and its gradient moves Out@GRAD back the same way (flip's gradient is a flip)."""

from __future__ import annotations

from ..ir import AttrType
from ..registry import defop, grad_op, typed
from .infer import same_as
from .shape import tensor_length


def _axes(ctx, axes, rank: int) -> list[int]:
    """Axes in range and distinct, as indices >= 0."""
    normalized = [ctx.axis(a, rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        ctx.fail(f"{ctx.op.type} axis {list(axes)} names a dim twice")
    return normalized


def _flip_infer(ctx):
    _axes(ctx, ctx.attr("axis"), len(ctx.shape("X")))
    return same_as("X")(ctx)


def _flip_grad(g):
    return [g.op("flip", {"X": g.OG("Out")}, {"Out": g.IG("X")}, {"axis": g.attr("axis")})]


defop("flip", ["X"], attrs={"axis": []}, infer=_flip_infer, grad=_flip_grad)


def _roll_infer(ctx):
    x, axes = ctx.shape("X"), list(ctx.attr("axis"))
    shifts = tensor_length(ctx, "ShiftsTensor") if ctx.has("ShiftsTensor") else len(ctx.attr("shifts"))
    for a in axes:
        ctx.axis(a, len(x))
    if shifts is not None and (shifts != len(axes) if axes else shifts != 1):
        ctx.fail(f"roll needs one shift per axis {axes} (one shift with no axis: a flat roll), got {shifts}")
    return same_as("X")(ctx)


defop("roll", ["X", "ShiftsTensor?"], attrs={"axis": typed([], AttrType.LONGS), "shifts": typed([], AttrType.LONGS)},
      no_grad_inputs=["ShiftsTensor"], infer=_roll_infer, grad=grad_op("X", "ShiftsTensor"))


def _tril_triu_infer(ctx):
    if len(ctx.shape("X")) < 2:
        ctx.fail(f"tril_triu needs X of rank >= 2, got {ctx.shape('X')}")
    return same_as("X")(ctx)


# tril_triu_grad masks Out@GRAD like the forward masks X
defop("tril_triu", ["X"], attrs={"diagonal": 0, "lower": False}, infer=_tril_triu_infer, grad=grad_op())


def _meshgrid_infer(ctx):
    shapes = ctx.shapes("X")
    if any(len(s) > 1 for s in shapes):
        ctx.fail(f"meshgrid needs 1-D (or 0-d) inputs, got {shapes}")
    dims = [s[0] if s else 1 for s in shapes]
    return {"Out": [(dims, ctx.dtype("X", i)) for i in range(len(shapes))]}


defop("meshgrid", ["X[]"], ["Out[]"], infer=_meshgrid_infer, grad=grad_op("X"))
