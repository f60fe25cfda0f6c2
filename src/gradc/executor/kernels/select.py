"""Kernels of gradc.ops.select (put_along_axis has a module of its own: gradc.executor.kernels.put_along).
An index outside what Paddle accepts is a ValueError naming the slot and the offending value."""

from __future__ import annotations

import numpy as np

from ...shapes import normalize_axis
from . import kernel
from .broadcast import unbroadcast
from .index import checked, scatter_add


def along_coords(index: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """Coordinates of the elements take/put_along_axis address: the index's own, with ``axis`` from it."""
    coords = list(np.indices(index.shape, sparse=True))
    coords[axis] = index
    return tuple(coords)


def _flat_index(index: np.ndarray) -> np.ndarray:
    return index[:, 0] if index.ndim == 2 and index.shape[1] == 1 else index.reshape(-1)


@kernel("index_select")
def index_select(k):
    x = k.x("X")
    dim = normalize_axis(k.attr("dim"), x.ndim)
    return {"Out": np.take(x, checked(_flat_index(k.x("Index")), x.shape[dim], "Index"), axis=dim)}


@kernel("index_select_grad")
def index_select_grad(k):
    x = k.x("X")
    dim = normalize_axis(k.attr("dim"), x.ndim)
    index = checked(_flat_index(k.x("Index")), x.shape[dim], "Index")
    return {"X@GRAD": scatter_add(k.x("Out@GRAD"), index, x.shape[dim], dim)}


@kernel("index_sample")
def index_sample(k):
    x = k.x("X")
    return {"Out": np.take_along_axis(x, checked(k.x("Index"), x.shape[1], "Index", negative=False), axis=1)}


@kernel("index_sample_grad")
def index_sample_grad(k):
    x, dout = k.x("X"), k.x("Out@GRAD")
    dx = np.zeros(x.shape, dout.dtype)
    np.add.at(dx, along_coords(checked(k.x("Index"), x.shape[1], "Index", negative=False), 1), dout)
    return {"X@GRAD": dx}


def _take_args(k):
    x, index = k.x("Input"), k.x("Index")
    axis = normalize_axis(k.attr("Axis"), x.ndim)
    return x, along_coords(checked(index, x.shape[axis], "Index"), axis)


@kernel("take_along_axis")
def take_along_axis(k):
    x, coords = _take_args(k)
    return {"Result": x[coords]}


@kernel("take_along_axis_grad")
def take_along_axis_grad(k):
    x, coords = _take_args(k)
    dout = k.x("Result@GRAD")
    dx = np.zeros(x.shape, dout.dtype)
    np.add.at(dx, coords, dout)
    return {"Input@GRAD": dx}


def _nd_coords(index: np.ndarray, shape) -> tuple[np.ndarray, ...]:
    """scatter_nd_add's [..., depth] index as a tuple of coordinate arrays, each checked against its dim."""
    return tuple(checked(index[..., d], shape[d], "Index") for d in range(index.shape[-1]))


@kernel("scatter_nd_add")
def scatter_nd_add(k):
    x, index, updates = k.x("X"), k.x("Index"), k.x("Updates")
    out = x.copy()
    if index.shape[-1] == 0:  # each index row addresses all of X
        return {"Out": out + updates.reshape((-1,) + x.shape).sum(axis=0).astype(x.dtype)}
    np.add.at(out, _nd_coords(index, x.shape), updates)
    return {"Out": out}


@kernel("scatter_nd_add_grad")
def scatter_nd_add_grad(k):
    index, dout, updates = k.x("Index"), k.x("Out@GRAD"), k.x("Updates")

    def updates_grad():
        if index.shape[-1] == 0:
            return np.broadcast_to(dout, updates.shape).copy()
        return dout[_nd_coords(index, dout.shape)].reshape(updates.shape)

    return k.grads({"X@GRAD": lambda: dout.copy(), "Updates@GRAD": updates_grad})


def _mask(k):
    mask = k.x("Mask")
    if mask.dtype != np.bool_:
        raise ValueError(f"Mask must be bool, got {mask.dtype}")
    return mask


@kernel("masked_select")
def masked_select(k):
    x, mask = np.broadcast_arrays(k.x("X"), _mask(k))
    return {"Y": x[mask]}


@kernel("masked_select_grad")
def masked_select_grad(k):
    x, dy = k.x("X"), k.x("Y@GRAD")
    mask = np.broadcast_to(_mask(k), np.broadcast_shapes(x.shape, k.x("Mask").shape))
    grad = np.zeros(mask.shape, dy.dtype)
    grad[mask] = dy
    return {"X@GRAD": unbroadcast(grad, x.shape)}


kernel("where_index")(lambda k: {"Out": np.argwhere(k.x("Condition")).astype(np.int64)})


@kernel("restrict_nonzero")
def restrict_nonzero(k):
    found, count = np.argwhere(k.x("condition")).astype(np.int64), k.attr("total_true_num")
    if len(found) != count:
        raise ValueError(f"condition holds {len(found)} nonzero elements, not total_true_num {count}")
    return {"out": found}


@kernel("unique")
def unique(k):
    x, axes = k.x("X"), k.attr("axis")
    axis = normalize_axis(axes[0], x.ndim) if axes else None
    values, first, inverse, counts = np.unique(x if axis is not None else x.reshape(-1), return_index=True,
                                               return_inverse=True, return_counts=True, axis=axis)
    if not k.attr("is_sorted") and axis is None:  # Paddle's original unique: entries in order of first occurrence
        order = np.argsort(first, kind="stable")
        values, first, counts = values[order], first[order], counts[order]
        inverse = np.argsort(order)[inverse]
    dtype = np.int32 if k.attr("dtype") == 2 else np.int64
    return {"Out": values, "Indices": first.astype(dtype), "Index": inverse.reshape(-1).astype(dtype),
            "Counts": counts.astype(dtype)}


@kernel("unique_consecutive")
def unique_consecutive(k):
    """Runs of equal elements (of equal slices along axis); NaN equals nothing, so each NaN is a run of its own."""
    x, axes = k.x("X"), k.attr("axis")
    axis = normalize_axis(axes[0], x.ndim) if axes else None
    rows = x.reshape(-1, 1) if axis is None else np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
    new_run = np.ones(rows.shape[0], dtype=bool)
    new_run[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    starts = np.flatnonzero(new_run)
    out = rows[starts, 0] if axis is None else np.take(x, starts, axis=axis)
    dtype = np.int32 if k.attr("dtype") == 2 else np.int64
    inverse = np.cumsum(new_run) - 1
    counts = np.diff(np.append(starts, rows.shape[0]))
    return {"Out": out, "Index": inverse.astype(dtype), "Counts": counts.astype(dtype)}


@kernel("gather_tree")
def gather_tree(k):
    """Backtrack beams: the last step's ids, then at each earlier step the id of the parent beam."""
    ids, parents = k.x("Ids"), k.x("Parents")
    out = np.empty_like(ids)
    beam = np.broadcast_to(np.arange(ids.shape[2]), ids.shape[1:])
    batch = np.arange(ids.shape[1])[:, None]
    for step in range(ids.shape[0] - 1, -1, -1):
        out[step] = ids[step, batch, beam]
        beam = checked(parents[step, batch, beam], ids.shape[2], "Parents", negative=False)
    return {"Out": out}


def _index_add_args(k, shape):
    axis = normalize_axis(k.attr("axis"), len(shape))
    return checked(_flat_index(k.x("Index")), shape[axis], "Index"), axis


@kernel("index_add")
def index_add(k):
    x, value = k.x("X"), k.x("AddValue")
    index, axis = _index_add_args(k, x.shape)
    return {"Out": x + scatter_add(value, index, x.shape[axis], axis).astype(x.dtype)}


@kernel("index_add_grad")
def index_add_grad(k):
    dout = k.x("Out@GRAD")
    index, axis = _index_add_args(k, dout.shape)
    return k.grads({"X@GRAD": lambda: dout.copy(),
                    "AddValue@GRAD": lambda: np.take(dout, index, axis=axis).astype(k.x("AddValue").dtype)})


@kernel("shard_index")
def shard_index(k):
    """An id of shard_id's range [shard_id * size, (shard_id + 1) * size) becomes its offset there; the others
    ignore_value (size: index_num split in nshards, rounded up)."""
    x = k.x("X")
    size = -(-k.attr("index_num") // k.attr("nshards"))
    if ((x < 0) | (x >= k.attr("index_num"))).any():
        raise ValueError(f"X holds ids outside [0, index_num = {k.attr('index_num')})")
    mine = x // size == k.attr("shard_id")
    return {"Out": np.where(mine, x - k.attr("shard_id") * size, k.attr("ignore_value")).astype(x.dtype)}


@kernel("bincount")
def bincount(k):
    x, weights = k.x("X"), k.optional("Weights")
    if (x < 0).any():
        raise ValueError("X holds negative values")
    out = np.bincount(x, weights=weights, minlength=k.attr("minlength"))
    keep = weights is not None and weights.dtype.kind == "f"
    return {"Out": out.astype(weights.dtype if keep else np.int64)}


def _histogram_range(k, x: np.ndarray):
    """[min, max] in X's dtype: the attributes, X's own range where they are equal, widened by 1 on each side
    where that is a point too."""
    low, high = (x.dtype.type(k.attr(name)) for name in ("min", "max"))
    if low == high and x.size:
        low, high = x.min(), x.max()
    if low == high:
        low, high = low - 1, high + 1
    if not np.isfinite(high - low):
        raise ValueError(f"the histogram range [{low}, {high}] is not finite")
    return low, high


@kernel("histogram")
def histogram(k):
    x, weight, bins = k.x("X").reshape(-1), k.optional("Weight"), k.attr("bins")
    low, high = _histogram_range(k, x)
    inside = (x >= low) & (x <= high)
    values = x[inside]
    # the bin in X's arithmetic, as Paddle computes it: floor for floats, integer division for integers
    if x.dtype.kind == "f":
        place = np.floor((values - low) * x.dtype.type(bins) / (high - low)).astype(np.int64)
    else:
        place = (values.astype(np.int64) - int(low)) * bins // (int(high) - int(low))
    place = np.minimum(place, bins - 1)   # X == max falls in the last bin
    weights = None if weight is None else weight.reshape(-1)[inside].astype(np.float64)
    out = np.bincount(place, weights=weights, minlength=bins)
    if k.attr("density"):
        with np.errstate(invalid="ignore", divide="ignore"):   # nothing in range: NaN, as in Paddle
            out = out / out.sum() / ((float(high) - float(low)) / bins)
    return {"Out": out.astype(np.float32 if weight is not None or k.attr("density") else np.int64)}
