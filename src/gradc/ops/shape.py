"""Ops that move data around without arithmetic: split, concat."""

from __future__ import annotations

from ..registry import defop, grad_op
from .infer import normalize_axis


def _split_infer(ctx):
    shape = ctx.shape("X")
    axis = normalize_axis(ctx.attr("axis"), len(shape))
    sections = list(ctx.attr("sections") or [])
    count = len(ctx.op.output("Out"))
    if not sections:
        sections = [shape[axis] // count if shape[axis] >= 0 else -1] * count
    elif -1 in sections and shape[axis] >= 0:
        known = sum(s for s in sections if s != -1)
        sections = [shape[axis] - known if s == -1 else s for s in sections]
    outs = []
    for size in sections:
        out = list(shape)
        out[axis] = size
        outs.append((out, ctx.dtype("X")))
    return {"Out": outs}


def _split_grad(g):
    """The grad of split is a concat of the output grads; missing ones are zero-filled."""
    return [g.op("concat", {"X": g.OG("Out")}, {"Out": g.IG("X")}, {"axis": g.attr("axis")})]


defop("split", ["X", "AxisTensor", "SectionsTensorList"], attrs={"axis": 0, "num": 0, "sections": []},
      no_grad_inputs=["AxisTensor", "SectionsTensorList"], infer=_split_infer, grad=_split_grad)


def _concat_infer(ctx):
    shapes = ctx.shapes("X")
    axis = normalize_axis(ctx.attr("axis"), len(shapes[0]))
    out = list(shapes[0])
    out[axis] = -1 if any(s[axis] < 0 for s in shapes) else sum(s[axis] for s in shapes)
    for shape in shapes[1:]:
        if len(shape) != len(out) or any(a != b and a >= 0 and b >= 0
                                         for i, (a, b) in enumerate(zip(shape, shapes[0])) if i != axis):
            ctx.fail(f"concat inputs differ outside axis {axis}: {shapes}")
    return {"Out": (out, ctx.dtype("X"))}


defop("concat", ["X", "AxisTensor"], attrs={"axis": 0}, no_grad_inputs=["AxisTensor"],
      infer=_concat_infer, grad=grad_op("X"))
