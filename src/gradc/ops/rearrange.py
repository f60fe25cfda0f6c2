"""Ops that move, copy or mask elements of a tensor: flip, roll, tril_triu, meshgrid, unbind, repeat_interleave,
diag_v2 (the pixel and channel shuffles are in gradc.ops.vision). Each is linear, and its gradient moves Out@GRAD
back the same way (flip's gradient is a flip, unbind's a stack; copies add up)."""

from __future__ import annotations

from ..ir import AttrType
from ..registry import defop, grad_op, typed
from ..shapes import dims_match
from .infer import same_as
from .shape import along_axis, tensor_length


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


def _unbind_infer(ctx):
    x = ctx.shape("X")
    axis = along_axis(ctx, x)
    count = len(ctx.op.output("Out")) or x[axis]
    if x[axis] >= 0 and count != x[axis]:
        ctx.fail(f"unbind along axis {axis} of {x} gives {x[axis]} tensors, but {count} outputs are named")
    return {"Out": [(x[:axis] + x[axis + 1:], ctx.dtype("X"))] * count}


def _unbind_grad(g):
    """Paddle's own: the output grads stacked back along the axis (missing ones zero-filled)."""
    return [g.op("stack", {"X": g.OG("Out")}, {"Y": g.IG("X")}, {"axis": g.attr("axis")})]


defop("unbind", ["X"], ["Out[]"], attrs={"axis": 0}, infer=_unbind_infer, grad=_unbind_grad)


def _repeat_interleave_infer(ctx):
    x = ctx.shape("X")
    dim = ctx.axis(ctx.attr("dim"), len(x))
    out = list(x)
    if ctx.has("RepeatsTensor"):   # per-element repeats: the total is known at run time (or from output_size)
        repeats = ctx.shape("RepeatsTensor")
        if len(repeats) != 1 or not dims_match(repeats[0], x[dim] if x else 1):
            ctx.fail(f"repeat_interleave RepeatsTensor must be [X's dim {dim}] = [{x[dim] if x else 1}], got {repeats}")
        out[dim] = ctx.attr("output_size") if ctx.attr("output_size") > 0 else -1
    elif ctx.attr("Repeats") < 0:
        ctx.fail(f"repeat_interleave Repeats must be >= 0, got {ctx.attr('Repeats')}")
    elif out:
        out[dim] = -1 if out[dim] < 0 else out[dim] * ctx.attr("Repeats")
    return {"Out": (out, ctx.dtype("X"))}


defop("repeat_interleave", ["X", "RepeatsTensor?"],
      attrs={"Repeats": 0, "dim": 0, "output_size": typed(-1, AttrType.LONG)}, no_grad_inputs=["RepeatsTensor"],
      infer=_repeat_interleave_infer, grad=grad_op("X", "RepeatsTensor"))


def diagonal_length(rows: int, cols: int, offset: int) -> int:
    """Elements on the diagonal ``offset`` (> 0 above the main one) of a rows x cols matrix."""
    return max(min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols), 0)


def _diag_v2_infer(ctx):
    x, offset = ctx.shape("X"), ctx.attr("offset")
    if len(x) > 2:
        ctx.fail(f"diag_v2 needs a 1-D X (builds a matrix) or a 2-D X (takes a diagonal), got {x}")
    if len(x) < 2:   # a 0-d X is a one-element vector
        size = -1 if x and x[0] < 0 else (x[0] if x else 1) + abs(offset)
        return {"Out": ([size, size], ctx.dtype("X"))}
    rows, cols = x
    if rows >= 0 and cols >= 0 and not -rows < offset < cols:
        ctx.fail(f"diag_v2 offset {offset} names no diagonal of a {rows} x {cols} matrix")
    return {"Out": ([-1 if rows < 0 or cols < 0 else diagonal_length(rows, cols, offset)], ctx.dtype("X"))}


defop("diag_v2", ["X"], attrs={"offset": 0, "padding_value": 0.0}, infer=_diag_v2_infer, grad=grad_op("X"))
