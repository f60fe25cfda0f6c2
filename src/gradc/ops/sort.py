"""Ops that order elements: argsort, kthvalue, searchsorted. Ties keep their original order (a stable sort),
one of the orders Paddle may give; Indices never get a gradient."""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop, grad_op
from ..shapes import dims_match


def _argsort_infer(ctx):
    x = ctx.shape("X")
    ctx.axis(ctx.attr("axis"), len(x))
    return {"Out": (x, ctx.dtype("X")), "Indices": (x, VarType.INT64)}


defop("argsort", ["X"], ["Out", "Indices"], attrs={"axis": -1, "descending": False, "stable": False},
      no_grad_outputs=["Indices"], infer=_argsort_infer, grad=grad_op("X", "Indices"))


def _kthvalue_infer(ctx):
    x, k = ctx.shape("X"), ctx.attr("k")
    axis = ctx.axis(ctx.attr("axis"), len(x))
    size = x[axis] if x else 1
    if k < 1 or k > size >= 0:
        ctx.fail(f"kthvalue k {k} must be in [1, {size}] (axis {axis} of {x})")
    out = x[:axis] + ([1] if ctx.attr("keepdim") else []) + x[axis + 1:]
    return {"Out": (out, ctx.dtype("X")), "Indices": (out, VarType.INT64)}


defop("kthvalue", ["X"], ["Out", "Indices"], attrs={"k": 1, "axis": -1, "keepdim": False},
      no_grad_outputs=["Indices"], infer=_kthvalue_infer, grad=grad_op("X", "Indices"))


def _searchsorted_infer(ctx):
    sorted_seq, values = ctx.shape("SortedSequence"), ctx.shape("Values")
    if len(sorted_seq) > 1 and (len(values) != len(sorted_seq) or not all(map(dims_match, sorted_seq[:-1],
                                                                              values[:-1]))):
        ctx.fail(f"searchsorted needs a 1-D SortedSequence or one whose leading dims are Values': "
                 f"{sorted_seq} and {values}")
    return {"Out": (values, VarType.INT32 if ctx.attr("out_int32") else VarType.INT64)}


defop("searchsorted", ["SortedSequence", "Values"], attrs={"out_int32": False, "right": False},
      infer=_searchsorted_infer, grad=NO_GRAD)
