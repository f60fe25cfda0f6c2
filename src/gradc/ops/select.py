"""Ops that pick or place elements by index tensors: index_select, index_sample, take_along_axis,
put_along_axis, scatter_nd_add, index_add, masked_select, where_index, unique, unique_consecutive, gather_tree,
shard_index, bincount, histogram. Index inputs never get a gradient; ops whose output size depends on the data
(masked_select, where_index, unique, unique_consecutive, bincount) infer it unknown."""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..ir.types import dtype_name
from ..registry import NO_GRAD, defop, grad_op, typed
from ..shapes import broadcast_dims, dims_match, numel
from .index import INDEX_DTYPES


def _index_select_infer(ctx):
    x, index = ctx.shape("X"), ctx.shape("Index")
    if len(index) > 1 and not (len(index) == 2 and index[1] == 1):
        ctx.fail(f"index_select needs a 1-D Index, got {index}")
    dim = ctx.axis(ctx.attr("dim"), len(x))
    return {"Out": (x[:dim] + index[:1] + x[dim + 1:], ctx.dtype("X"))}


defop("index_select", ["X", "Index"], attrs={"dim": 0}, no_grad_inputs=["Index"], infer=_index_select_infer,
      grad=grad_op("X", "Index"))


def _index_sample_infer(ctx):
    x, index = ctx.shape("X"), ctx.shape("Index")
    if len(x) != 2 or len(index) != 2 or not dims_match(x[0], index[0]):
        ctx.fail(f"index_sample needs X [N, D] and Index [N, K], got {x} and {index}")
    return {"Out": (index, ctx.dtype("X"))}


defop("index_sample", ["X", "Index"], no_grad_inputs=["Index"], infer=_index_sample_infer,
      grad=grad_op("X", "Index"))


def _along_axis(ctx, values: str | None = None) -> list[int]:
    """take/put_along_axis: Index (and Value) of Input's rank, no larger than Input off the axis."""
    x, index = ctx.shape("Input"), ctx.shape("Index")
    axis = ctx.axis(ctx.attr("Axis"), len(x))
    shapes = [index] + ([ctx.shape(values)] if values else [])
    if any(len(s) != len(x) for s in shapes):
        ctx.fail(f"{ctx.op.type} needs Index{' and Value' if values else ''} of Input's rank {len(x)}, "
                 f"got {shapes}")
    if any(d > n >= 0 for i, (d, n) in enumerate(zip(index, x)) if i != axis):
        ctx.fail(f"{ctx.op.type} Index {index} is larger than Input {x} off axis {axis}")
    return index


defop("take_along_axis", ["Input", "Index"], ["Result"], attrs={"Axis": 0}, no_grad_inputs=["Index"],
      infer=lambda ctx: {"Result": (_along_axis(ctx), ctx.dtype("Input"))}, grad=grad_op("Input", "Index"))

PUT_REDUCTIONS = ("assign", "add", "mul", "multiply", "mean", "amin", "amax")


def _put_along_axis_infer(ctx):
    _along_axis(ctx, "Value")
    if ctx.attr("Reduce") not in PUT_REDUCTIONS:
        ctx.fail(f"put_along_axis Reduce {ctx.attr('Reduce')!r} is not one of {PUT_REDUCTIONS}")
    return {"Result": (ctx.shape("Input"), ctx.dtype("Input"))}


defop("put_along_axis", ["Input", "Index", "Value"], ["Result"],
      attrs={"Axis": 0, "Reduce": "assign", "Include_self": True}, no_grad_inputs=["Index"],
      infer=_put_along_axis_infer, grad=grad_op("Input", "Index", "Value", "Result"))


def _scatter_nd_add_infer(ctx):
    x, index, updates = ctx.shape("X"), ctx.shape("Index"), ctx.shape("Updates")
    depth = index[-1] if index else -1
    if not index or depth > len(x):
        ctx.fail(f"scatter_nd_add Index {index} must end in a dim <= X's rank {len(x)}")
    want = index[:-1] + x[max(depth, 0):]
    if depth >= 0 and (len(updates) != len(want) or not all(map(dims_match, updates, want))):
        ctx.fail(f"scatter_nd_add needs Updates shaped Index[:-1] + X[Index[-1]:] = {want}, got {updates}")
    return {"Out": (x, ctx.dtype("X"))}


defop("scatter_nd_add", ["X", "Index", "Updates"], no_grad_inputs=["Index"], infer=_scatter_nd_add_infer,
      grad=grad_op("Index", "Updates"))


def _masked_select_infer(ctx):
    broadcast_dims(ctx.shape("X"), ctx.shape("Mask"), -1, ctx.fail)
    return {"Y": ([-1], ctx.dtype("X"))}


defop("masked_select", ["X", "Mask"], ["Y"], no_grad_inputs=["Mask"], infer=_masked_select_infer,
      grad=grad_op("X", "Mask"))


def _where_index_infer(ctx):
    shape = ctx.shape("Condition")
    if not shape:
        ctx.fail("where_index needs a Condition of rank >= 1, got a 0-d tensor")
    return {"Out": ([-1, len(shape)], VarType.INT64)}


defop("where_index", ["Condition"], infer=_where_index_infer, grad=NO_GRAD)


def _restrict_nonzero_infer(ctx):
    shape, count = ctx.shape("condition"), ctx.attr("total_true_num")
    if not shape or count < 0:
        ctx.fail(f"restrict_nonzero needs a condition of rank >= 1 and total_true_num >= 0, got {shape} and {count}")
    return {"out": ([count, len(shape)], VarType.INT64)}


# where_index with its count given (paddle.tensor.search._restrict_nonzero): a condition holding another count is
# refused at run time (Paddle 3.3.1 has a GPU kernel only, whose result there gradc does not know)
defop("restrict_nonzero", ["condition"], ["out"], attrs={"total_true_num": typed(0, AttrType.LONG)},
      infer=_restrict_nonzero_infer, grad=NO_GRAD)


def _unique_shapes(ctx, op: str):
    """(Out's shape, the element (or slice) count Index maps, the index dtype) of unique and unique_consecutive."""
    x, axes = ctx.shape("X"), list(ctx.attr("axis"))
    if len(axes) > 1:
        ctx.fail(f"{op} takes at most one axis, got {axes}")
    if ctx.attr("dtype") not in (2, 3):
        ctx.fail(f"{op} dtype {ctx.attr('dtype')} is not int32 (2) or int64 (3)")
    axis = ctx.axis(axes[0], len(x)) if axes else None
    out = [-1] if axis is None else x[:axis] + [-1] + x[axis + 1:]
    return out, numel(x) if axis is None else x[axis], INDEX_DTYPES[ctx.attr("dtype")]


def _unique_infer(ctx):
    out, size, index = _unique_shapes(ctx, "unique")   # Index maps each element (or slice) to its unique entry
    sorted_form = ctx.attr("is_sorted")   # paddle.unique's: it writes only the results asked for (declared [] else)
    return {"Out": (out, ctx.dtype("X")), "Indices": ([-1] if ctx.attr("return_index") else None, index),
            "Index": ([size] if ctx.attr("return_inverse") or not sorted_form else None, index),
            "Counts": ([-1] if ctx.attr("return_counts") or not sorted_form else None, index)}


defop("unique", ["X"], ["Out", "Indices?", "Index", "Counts?"],
      attrs={"dtype": 3, "return_index": False, "return_inverse": False, "return_counts": False, "axis": [],
             "is_sorted": False},
      infer=_unique_infer, grad=NO_GRAD)


def _unique_consecutive_infer(ctx):
    out, size, index = _unique_shapes(ctx, "unique_consecutive")
    shapes = {"Out": (out, ctx.dtype("X"))}   # Index and Counts only when asked for: Paddle leaves them unset else
    if ctx.attr("return_inverse"):
        shapes["Index"] = ([size], index)
    if ctx.attr("return_counts"):
        shapes["Counts"] = ([-1], index)
    return shapes


# each run of equal elements (slices along axis) kept once; Index maps each to its run, Counts are run lengths
defop("unique_consecutive", ["X"], ["Out", "Index?", "Counts?"],
      attrs={"axis": [], "dtype": 5, "return_inverse": False, "return_counts": False},
      infer=_unique_consecutive_infer, grad=NO_GRAD)


def _gather_tree_infer(ctx):
    ids, parents = ctx.shape("Ids"), ctx.shape("Parents")
    if len(ids) != 3 or len(parents) != 3 or not all(map(dims_match, ids, parents)):
        ctx.fail(f"gather_tree needs Ids and Parents of one shape [steps, batch, beam], got {ids} and {parents}")
    return {"Out": (ids, ctx.dtype("Ids"))}


defop("gather_tree", ["Ids", "Parents"], infer=_gather_tree_infer, grad=NO_GRAD)


def _index_add_infer(ctx):
    x, index, value = ctx.shape("X"), ctx.shape("Index"), ctx.shape("AddValue")
    axis = ctx.axis(ctx.attr("axis"), len(x))
    want = x[:axis] + index[:1] + x[axis + 1:]
    if len(index) != 1 or len(value) != len(want) or not all(map(dims_match, value, want)):
        ctx.fail(f"index_add needs a 1-D Index and AddValue shaped like X with Index's length on axis {axis}: "
                 f"{want}, got Index {index} and AddValue {value}")
    return {"Out": (x, ctx.dtype("X"))}


defop("index_add", ["X", "Index", "AddValue"], attrs={"axis": 0}, no_grad_inputs=["Index"],
      infer=_index_add_infer, grad=grad_op("Index", "AddValue"))


def _shard_index_infer(ctx):
    x = ctx.shape("X")
    count, shards, shard = ctx.attr("index_num"), ctx.attr("nshards"), ctx.attr("shard_id")
    if not x or x[-1] not in (1, -1) or count < 1 or shards < 1 or not 0 <= shard < shards:
        ctx.fail(f"shard_index needs X [..., 1], index_num >= 1 and 0 <= shard_id < nshards, got {x}, "
                 f"index_num {count}, shard_id {shard}, nshards {shards}")
    return {"Out": (x, ctx.dtype("X"))}


defop("shard_index", ["X"], attrs={"index_num": 0, "nshards": 1, "shard_id": 0, "ignore_value": -1},
      infer=_shard_index_infer, grad=NO_GRAD)


def _bincount_infer(ctx):
    x, weights = ctx.shape("X"), ctx.shape("Weights") if ctx.has("Weights") else None
    if len(x) != 1 or (weights is not None and (len(weights) != 1 or not dims_match(weights[0], x[0]))):
        ctx.fail(f"bincount needs a 1-D X and Weights of its length, got X {x} and Weights {weights}")
    if ctx.attr("minlength") < 0:
        ctx.fail(f"bincount minlength must be >= 0, got {ctx.attr('minlength')}")
    dtype = ctx.dtype("Weights") if ctx.has("Weights") else VarType.INT64
    return {"Out": ([-1], dtype if dtype in (VarType.FP32, VarType.FP64) else VarType.INT64)}


defop("bincount", ["X", "Weights?"], attrs={"minlength": 0}, infer=_bincount_infer, grad=NO_GRAD,
      tensor_attrs=["minlength"])


def _histogram_infer(ctx):
    x, weight, bins = ctx.shape("X"), ctx.shape("Weight") if ctx.has("Weight") else None, ctx.attr("bins")
    if bins < 1:
        ctx.fail(f"histogram bins must be >= 1, got {bins}")
    if ctx.attr("max") < ctx.attr("min"):
        ctx.fail(f"histogram max {ctx.attr('max')} is below min {ctx.attr('min')}")
    if weight is not None and (len(weight) != len(x) or not all(map(dims_match, weight, x))
                               or ctx.dtype("Weight") != ctx.dtype("X")):
        ctx.fail(f"histogram Weight must have X's shape {x} and dtype {dtype_name(ctx.dtype('X'))}, got {weight} "
                 f"{dtype_name(ctx.dtype('Weight'))}")
    counted = weight is not None or ctx.attr("density")
    return {"Out": ([bins], VarType.FP32 if counted else VarType.INT64)}


# counts of X in `bins` equal bins over [min, max] (min == max: X's own range); with Weight, sums of weights;
# with density, divided by the total and the bin width. Out is int64, float32 with Weight or density.
defop("histogram", ["X", "Weight?"], attrs={"bins": typed(100, AttrType.LONG), "min": 0.0, "max": 0.0,
                                            "density": False},
      infer=_histogram_infer, grad=NO_GRAD)
