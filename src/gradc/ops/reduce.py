"""Reductions over dims (or all of them)."""

from __future__ import annotations

from ..registry import defop, grad_op
from .infer import normalize_axis

REDUCE_ATTRS = {"dim": [0], "keep_dim": False, "reduce_all": False, "in_dtype": -1, "out_dtype": -1}


def reduced_axes(attrs_of, rank: int) -> tuple[int, ...]:
    """The axes a reduce op folds: all of them with reduce_all, an empty dim list, or every dim listed."""
    dims = list(attrs_of("dim") or [])
    if attrs_of("reduce_all") or not dims:
        return tuple(range(rank))
    return tuple(sorted({normalize_axis(d, rank) for d in dims}))


def _reduce_infer(ctx):
    shape = ctx.shape("X")
    axes = reduced_axes(ctx.attr, len(shape))
    if ctx.attr("keep_dim"):
        out = [1 if i in axes else d for i, d in enumerate(shape)]
    else:
        out = [d for i, d in enumerate(shape) if i not in axes]
    return {"Out": (out, ctx.dtype("X"))}


for _name in ("reduce_sum", "reduce_mean"):
    defop(_name, ["X"], attrs=REDUCE_ATTRS, infer=_reduce_infer, grad=grad_op("X"))

defop("mean", ["X"], infer=lambda ctx: {"Out": ([], ctx.dtype("X"))}, grad=grad_op("X"))
