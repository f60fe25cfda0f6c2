"""Kernels of gradc.ops.index. Grads of ops that read elements by position add Out@GRAD back into
zeros at those positions (np.add.at, so repeated indices accumulate)."""

from __future__ import annotations

import numpy as np

from ...ops.index import slicing
from ...shapes import normalize_axis
from . import kernel, scans_order


def scatter_add(grad: np.ndarray, index: np.ndarray, size: int, axis: int) -> np.ndarray:
    """The adjoint of np.take(x, index, axis) for an x with ``size`` entries along ``axis``."""
    moved = np.moveaxis(grad, axis, 0)
    out = np.zeros((size,) + moved.shape[1:], grad.dtype)
    np.add.at(out, np.ravel(index), moved)
    return np.moveaxis(out, 0, axis)


def checked(index: np.ndarray, size: int, slot: str, negative: bool = True) -> np.ndarray:
    """``index`` as int64 in [0, size); negative entries count from the end where Paddle allows them."""
    index = np.asarray(index).astype(np.int64)
    low = -size if negative else 0
    bad = index[(index < low) | (index >= size)]
    if bad.size:
        raise ValueError(f"{slot} holds {bad.ravel()[0]}, outside [{low}, {size})")
    return np.where(index < 0, index + size, index)


def ints(k, slots, attr: str) -> list[int]:
    """An int-list attribute, overridden by the first given input slot (a tensor, or a list of 1-element
    tensors), in Paddle's order of priority."""
    for slot in slots:
        if k.has(slot):
            return [int(v) for t in k.xs(slot) for v in np.ravel(t)]
    return list(k.attr(attr))


def _bounds(k, name: str) -> list[int]:
    """starts/ends/strides of slice and strided_slice."""
    slot = name.capitalize() + "Tensor"
    return ints(k, [slot, slot + "List"], name)


def _slicing(k, shape, strided: bool):
    """The index tuple of a slice/strided_slice, and the output shape once decrease_axis is dropped."""
    axes = k.attr("axes")
    strides = _bounds(k, "strides") if strided else [1] * len(axes)
    return slicing(list(shape), axes, _bounds(k, "starts"), _bounds(k, "ends"), strides, k.attr("decrease_axis"))


def _slice_pair(name: str, strided: bool) -> None:
    @kernel(name)
    def forward(k):
        x = k.x("Input")
        index, shape = _slicing(k, x.shape, strided)
        return {"Out": x[index].reshape(shape)}

    @kernel(name + "_grad")
    def backward(k):
        x, dout = k.x("Input"), k.x("Out@GRAD")
        index, _ = _slicing(k, x.shape, strided)
        dx = np.zeros(x.shape, dout.dtype)
        dx[index] = dout.reshape(dx[index].shape)
        return {"Input@GRAD": dx}


_slice_pair("slice", strided=False)
_slice_pair("strided_slice", strided=True)


def _gather_args(k):
    x, index = k.x("X"), k.x("Index")
    axis = int(np.ravel(k.x("Axis"))[0]) if k.has("Axis") else k.attr("axis")
    if index.ndim == 2 and index.shape[1] == 1:  # [N, 1] is read as [N]
        index = index[:, 0]
    axis = normalize_axis(axis, x.ndim)
    return x, checked(index, x.shape[axis], "Index"), axis


@kernel("gather")
def gather(k):
    x, index, axis = _gather_args(k)
    return {"Out": np.take(x, index, axis=axis)}


@kernel("gather_grad")
def gather_grad(k):
    x, index, axis = _gather_args(k)
    dout = k.x("Out@GRAD").reshape(x.shape[:axis] + (index.size,) + x.shape[axis + 1:])
    return {"X@GRAD": scatter_add(dout, index, x.shape[axis], axis)}


def _nd_index(index, shape):
    """gather_nd's [..., k] index as a tuple of k index arrays, each within its dim of X (negative from the end)."""
    return tuple(checked(i, size, f"Index[..., {d}]") for d, (i, size) in enumerate(zip(np.moveaxis(index, -1, 0),
                                                                                         shape)))


@kernel("gather_nd")
def gather_nd(k):
    x, index = k.x("X"), k.x("Index")
    return {"Out": np.broadcast_to(x[_nd_index(index, x.shape)], index.shape[:-1] + x.shape[index.shape[-1]:]).copy()}


@kernel("gather_nd_grad")
def gather_nd_grad(k):
    x, index, dout = k.x("X"), k.x("Index"), k.x("Out@GRAD")
    dx = np.zeros(x.shape, dout.dtype)
    if index.shape[-1] == 0:  # every index picks all of X
        return {"X@GRAD": dout.reshape((-1,) + x.shape).sum(axis=0)}
    np.add.at(dx, _nd_index(index, x.shape), dout)
    return {"X@GRAD": dx}


def _scatter_args(k, rows: int):
    """Ids as a flat int array of rows (negative from the end), and which entries write: with overwrite, the
    last one per row."""
    ids = checked(np.ravel(k.x("Ids")), rows, "Ids")
    if not k.attr("overwrite"):
        return ids, np.ones(ids.shape, bool)
    _, last_from_end = np.unique(ids[::-1], return_index=True)
    writes = np.zeros(ids.shape, bool)
    writes[ids.size - 1 - last_from_end] = True
    return ids, writes


@kernel("scatter")
def scatter(k):
    x, updates = k.x("X"), k.x("Updates")
    ids, writes = _scatter_args(k, x.shape[0])
    out = x.copy()
    out[ids] = 0
    np.add.at(out, ids[writes], updates[writes])
    return {"Out": out}


@kernel("scatter_grad")
def scatter_grad(k):
    dout = k.x("Out@GRAD")
    ids, writes = _scatter_args(k, dout.shape[0])

    def dx():
        grad = dout.copy()
        grad[ids] = 0  # indexed rows are replaced (overwrite) or zeroed first (add): X never reaches them
        return grad

    mask = writes.reshape((-1,) + (1,) * (dout.ndim - 1))
    return k.grads({"X@GRAD": dx,
                    "Updates@GRAD": lambda: np.where(mask, dout[ids], 0).astype(dout.dtype, copy=False)})


def _arg(find):
    def forward(k):
        x = k.x("X")
        dtype = np.int32 if k.attr("dtype") == 2 else np.int64
        axis = normalize_axis(k.attr("axis"), x.ndim)
        if k.attr("flatten") or x.ndim == 0:  # a 0-d X has one element, at index 0
            out = np.reshape(find(x.reshape(-1)), (1,) * x.ndim if k.attr("keepdims") else ())
        else:
            out = find(x, axis=axis, keepdims=k.attr("keepdims"))
        return {"Out": np.asarray(out, dtype)}
    return forward


kernel("arg_max")(_arg(np.argmax))
kernel("arg_min")(_arg(np.argmin))


def _top_k_args(k, x, *arrays):
    """top_k's axis and X, ``arrays`` shaped as numpy needs them: a 0-d X runs as [1] (with k = 1)."""
    axis = normalize_axis(k.attr("axis"), x.ndim)
    return (axis,) + tuple(a.reshape(1) if x.ndim == 0 else a for a in (x,) + arrays)


@kernel("top_k_v2")
def top_k_v2(k):
    """numpy's stable order, except in rows where Paddle's unstable selection decides: two equal values competing
    for a place among the first k (or unsorted output, from nth_element), which replay libstdc++'s steps."""
    count = int(np.ravel(k.x("K"))[0]) if k.has("K") else k.attr("k")
    axis, x = _top_k_args(k, k.x("X"))
    largest, ordered = k.attr("largest"), k.attr("sorted")
    rows = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])
    order = np.argsort(-rows if largest else rows, axis=-1, kind="stable")   # NaN last either way
    ranked = np.take_along_axis(rows, order[:, :count + 1], axis=-1)
    nans = np.isnan(ranked) if rows.dtype.kind in "fc" else np.zeros(ranked.shape, bool)
    replay = ((ranked[:, 1:] == ranked[:, :-1]) | (nans[:, 1:] & nans[:, :-1])).any(axis=1)
    if nans.any() and largest:   # Paddle's largest puts NaN first
        replay |= nans.any(axis=1)
    if not ordered and 1 < count and count * 64 >= rows.shape[1]:   # nth_element's arrangement, not sorted
        replay[:] = True
    indices = order[:, :count].copy()
    select = scans_order.top_k_largest if largest else scans_order.top_k_ascending
    for row in np.flatnonzero(replay):
        indices[row] = select(rows[row].tolist(), count, ordered)
    indices = np.moveaxis(indices.reshape(*np.moveaxis(x, axis, -1).shape[:-1], count), -1, axis)
    shape = indices.shape if k.x("X").ndim else ()
    return {"Out": np.take_along_axis(x, indices, axis=axis).reshape(shape), "Indices": indices.reshape(shape)}


@kernel("top_k_v2_grad")
def top_k_v2_grad(k):
    axis, x, indices, dout = _top_k_args(k, k.x("X"), k.x("Indices").astype(np.int64), k.x("Out@GRAD"))
    dx = np.zeros(x.shape, dout.dtype)
    np.put_along_axis(dx, indices, dout, axis=axis)
    return {"X@GRAD": dx.reshape(k.x("X").shape)}


def _window(shape, sizes, offsets) -> tuple[slice, ...]:
    """crop_tensor's window in X of ``shape``: a size -1 takes the rest of the dim."""
    if len(sizes) != len(shape) or len(offsets) != len(shape):
        raise ValueError(f"crop_tensor needs a size and an offset per dim of {list(shape)}, got {sizes} and {offsets}")
    sizes = [d - o if s == -1 else s for d, s, o in zip(shape, sizes, offsets)]
    if any(s <= 0 or o < 0 or o + s > d for d, s, o in zip(shape, sizes, offsets)):
        raise ValueError(f"crop_tensor of {list(shape)} with sizes {sizes} at offsets {offsets} leaves X")
    return tuple(slice(o, o + s) for s, o in zip(sizes, offsets))


def _offsets(k) -> list[int]:
    return ints(k, ["Offsets", "OffsetsTensor"], "offsets")   # the tensor wins over the list, as in Paddle


@kernel("crop_tensor")
def crop_tensor(k):
    x = k.x("X")
    return {"Out": x[_window(x.shape, ints(k, ["Shape", "ShapeTensor"], "shape"), _offsets(k))].copy()}


@kernel("crop_tensor_grad")
def crop_tensor_grad(k):
    x, dout = k.x("X"), k.x("Out@GRAD")
    dx = np.zeros(x.shape, dout.dtype)
    dx[_window(x.shape, list(dout.shape), _offsets(k))] = dout
    return {"X@GRAD": dx}
