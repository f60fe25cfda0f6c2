"""Scans and order statistics along dims: cummax, cummin, logcumsumexp, mode, median, nanmedian.

Their gradients route Out@GRAD to the elements the forward op picked (its index outputs), except
logcumsumexp's, a softmax-like weighting, and median's at ties (docs/ops-scans.md)."""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import defop, grad_op, typed
from ..shapes import normalize_axis, numel
from .infer import check_float

INDEX_DTYPES = {int(VarType.INT32): VarType.INT32, int(VarType.INT64): VarType.INT64}
MEDIAN_MODES = ("avg", "min")


def _cum_extreme_infer(ctx):
    """out like x; indices of the attribute dtype (int32 or int64)."""
    x, dtype = ctx.shape("x"), ctx.attr("dtype")
    ctx.axis(ctx.attr("axis"), len(x))
    if dtype not in INDEX_DTYPES:
        ctx.fail(f"dtype {dtype} must be int32 ({int(VarType.INT32)}) or int64 ({int(VarType.INT64)})")
    return {"out": (x, ctx.dtype("x")), "indices": (x, INDEX_DTYPES[dtype])}


# the running max (min) and the index it was last taken at: a tie moves the index on, a NaN sticks
for _name in ("cummax", "cummin"):
    defop(_name, ["x"], ["out", "indices"], attrs={"axis": -1, "dtype": int(VarType.INT64)},
          no_grad_outputs=["indices"], infer=_cum_extreme_infer, grad=grad_op("x", "indices"))


def _logcumsumexp_infer(ctx):
    x = ctx.shape("X")
    check_float(ctx, "X")
    if ctx.attr("flatten"):
        return {"Out": ([numel(x)], ctx.dtype("X"))}
    ctx.axis(ctx.attr("axis"), len(x))
    return {"Out": (x, ctx.dtype("X"))}


# log(cumsum(exp(X))) along axis (of X flattened, with flatten); exclusive leaves each entry's own term out
defop("logcumsumexp", ["X"], attrs={"axis": -1, "flatten": False, "exclusive": False, "reverse": False},
      infer=_logcumsumexp_infer, grad=grad_op("X", "Out"))


def _mode_infer(ctx):
    x = ctx.shape("X")
    axis = ctx.axis(ctx.attr("axis"), len(x))
    if x and x[axis] == 0:
        ctx.fail(f"mode needs a nonempty axis {ctx.attr('axis')} of X {x}")
    out = x[:axis] + ([1] if ctx.attr("keepdim") and x else []) + x[axis + 1:]
    return {"Out": (out, ctx.dtype("X")), "Indices": (out, VarType.INT64)}


# the most frequent value along axis (the smallest of equally frequent ones) and where it last occurs
defop("mode", ["X"], ["Out", "Indices"], attrs={"axis": -1, "keepdim": False}, no_grad_outputs=["Indices"],
      infer=_mode_infer, grad=grad_op("X", "Indices"))


def median_axes(axes, rank: int, fail) -> list[int]:
    """The dims a median folds, ascending: every dim for no axis (or a rank <= 1 input). A dim named twice is
    an error, as in Paddle."""
    folded = [normalize_axis(axis, rank, fail) for axis in axes]
    if len(set(folded)) < len(folded):
        fail(f"axis {list(axes)} names a dim twice")
    return sorted(folded) if axes and rank > 1 else list(range(rank))


def _median_infer(x_slot: str, out_slot: str, index_slot: str, folds_empty: bool):
    """Out without the folded dims (size 1 with keepdim); the index output has a trailing 2 in mode avg
    (the two middle elements). Axes held by AxisTensor(List) are known at run time only. ``folds_empty``:
    no elements to fold give NaN (median), else they are an error (nanmedian)."""
    def infer(ctx):
        x, mode = ctx.shape(x_slot), ctx.attr("mode")
        if mode not in MEDIAN_MODES:
            ctx.fail(f"mode {mode!r} must be 'avg' or 'min'")
        pair = [2] if mode == "avg" else []
        if ctx.has("AxisTensor") or ctx.has("AxisTensorList"):
            out = [-1] * len(x) if ctx.attr("keepdim") else None
            return {out_slot: (out, ctx.dtype(x_slot)), index_slot: (out and out + pair, VarType.INT64)}
        axes = median_axes(ctx.attr("axis"), len(x), ctx.fail)
        if not folds_empty and any(x[i] == 0 for i in axes):
            ctx.fail(f"{ctx.op.type} needs elements to fold: {x_slot} {x}, axis {ctx.attr('axis')}")
        keepdim = ctx.attr("keepdim")
        out = [1 if i in axes else d for i, d in enumerate(x) if keepdim or i not in axes]
        return {out_slot: (out, ctx.dtype(x_slot)), index_slot: (out + pair, VarType.INT64)}
    return infer


# medians: the index (in the folded dims, row-major) of the middle element, or of the two middle ones in mode
# avg; a NaN makes the median NaN at the first NaN. AxisTensor / AxisTensorList, when given, hold the axes.
_MEDIAN_INPUTS = ["x", "AxisTensor?", "AxisTensorList[]?"]
defop("median", _MEDIAN_INPUTS, ["out", "medians"],
      attrs={"axis": typed([], AttrType.LONGS), "keepdim": True, "mode": "avg"}, no_grad_inputs=_MEDIAN_INPUTS[1:],
      no_grad_outputs=["medians"], infer=_median_infer("x", "out", "medians", folds_empty=True),
      grad=grad_op(*_MEDIAN_INPUTS, "medians", "out"))

# the median of the elements that are not NaN (NaN where all are); MedianIndex as median's medians
defop("nanmedian", ["X"], ["Out", "MedianIndex!"],
      attrs={"axis": typed([], AttrType.INTS), "keepdim": True, "mode": "avg"}, no_grad_outputs=["MedianIndex"],
      infer=_median_infer("X", "Out", "MedianIndex", folds_empty=False), grad=grad_op("X", "MedianIndex", "Out"))
