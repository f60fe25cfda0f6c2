"""Kernels of median and nanmedian (gradc.ops.scans). Both sort the folded dims of each output element as one
row and read the middle of it; their grads share Paddle 3.3.1's rule."""

from __future__ import annotations

import numpy as np

from ...ops.scans import median_axes
from ...shapes import value_error
from . import kernel
from .scans import isnan, scatter_rows
from .scans_order import top_k_ascending


def _median_axes(k) -> list[int]:
    """median's axes as given: AxisTensor or AxisTensorList when given, else the attribute."""
    tensors = [k.optional("AxisTensor")] if k.has("AxisTensor") else k.xs("AxisTensorList")
    return [int(d) for t in tensors for d in np.asarray(t).reshape(-1)] if tensors else list(k.attr("axis"))


def _rows(x: np.ndarray, axes: list[int]):
    """x as rows [R, n], the folded dims (ascending) last and flattened; and the way from rows back to x."""
    folded = median_axes(axes, x.ndim, value_error)
    perm = [i for i in range(x.ndim) if i not in folded] + folded
    moved = x.transpose(perm)
    n = int(np.prod([x.shape[a] for a in folded], dtype=np.int64))
    rows = moved.reshape(int(np.prod(moved.shape[:x.ndim - len(folded)], dtype=np.int64)), n)
    return rows, lambda r: r.reshape(moved.shape).transpose(np.argsort(perm))


def _out_shape(x: np.ndarray, axes: list[int], keepdim: bool) -> list[int]:
    folded = median_axes(axes, x.ndim, value_error)
    return [1 if i in folded else d for i, d in enumerate(x.shape) if keepdim or i not in folded]


def _halved_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a + b) / 2 in the dtype: integers truncate toward zero, as C++ division does."""
    if a.dtype.kind in "fc":
        return (a + b) / a.dtype.type(2)
    total = a + b
    return np.sign(total) * (np.abs(total) // 2)


def _median(k, x: np.ndarray, axes: list[int], ignore_nan: bool):
    """Out and the index output. In mode avg each row gives (left middle, right middle) and their mean; in mode
    min the left middle. median: a row with a NaN gives NaN at its first NaN. nanmedian: the middle of the
    elements that are not NaN; a row of NaNs only gives NaN at index -1 (when every element of X is NaN,
    Paddle's rows are sorted as they are, NaNs and all). Of equal middle elements, the index is the one
    Paddle's top_k names (scans_order)."""
    avg = k.attr("mode") == "avg"
    shape = _out_shape(x, axes, k.attr("keepdim"))
    pair_shape = shape + [2] if avg else shape
    rows, _ = _rows(x, axes)
    count, n = rows.shape
    if n == 0:
        if ignore_nan:
            raise ValueError(f"nanmedian needs elements to fold: X {list(x.shape)}, axis {axes}")
        return np.full(shape, np.nan, x.dtype), np.zeros(pair_shape, np.int64)
    nans = isnan(rows)
    if ignore_nan and not nans.all():   # Paddle's top_k then takes as many as the fullest row holds
        valid = n - nans.sum(axis=1)
        taken = int(valid.max())
    else:
        valid, taken = np.full(count, n), n // 2 + 1
    order = np.argsort(rows, axis=1, kind="stable")   # NaNs last
    at = np.arange(count)
    left, right = order[at, np.maximum(valid - 1, 0) // 2], order[at, np.minimum(valid // 2, n - 1)]
    undefined = valid == 0 if ignore_nan else nans.any(axis=1)
    for row in np.flatnonzero(~undefined & (_tied(rows, left) | _tied(rows, right))):
        smallest = top_k_ascending(rows[row].tolist(), taken)
        left[row], right[row] = smallest[(valid[row] - 1) // 2], smallest[valid[row] // 2]
    out = _halved_sum(rows[at, left], rows[at, right]) if avg else rows[at, left].copy()
    index = np.stack([left, right], axis=-1) if avg else left
    if undefined.any():
        out[undefined] = np.nan
        fill = np.full(count, -1) if ignore_nan else np.argmax(nans, axis=1)
        index[undefined] = fill[undefined, None] if avg else fill[undefined]
    return out.reshape(shape), index.reshape(pair_shape).astype(np.int64)


def _tied(rows: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """Per row: whether another element equals the picked one (NaN equal to NaN), so the pick is a choice."""
    value = rows[np.arange(rows.shape[0]), picked][:, None]
    return ((rows == value) | (isnan(rows) & isnan(value))).sum(axis=1) > 1


def _median_grad(k, x: np.ndarray, axes: list[int], out: np.ndarray, index: np.ndarray, dout: np.ndarray) -> np.ndarray:
    """Paddle 3.3.1's rule. Mode min over one axis: dout goes to the index. Otherwise it is shared evenly among
    the elements equal to Out (NaN counting as equal to NaN); where none is (mode avg between two different
    middles), each middle gets half."""
    rows, back = _rows(x, axes)
    at = np.arange(rows.shape[0])
    dout, out = dout.reshape(-1), out.reshape(-1)
    index = index.reshape(rows.shape[0], -1).astype(np.int64)
    if len(axes) == 1 and k.attr("mode") == "min":
        picked = index[:, 0] >= 0
        return back(scatter_rows(rows, np.where(picked, index[:, 0], 0)[:, None],
                                 np.where(picked, dout, 0)[:, None].astype(dout.dtype)))
    equal = (rows == out[:, None]) | (isnan(rows) & isnan(out)[:, None])
    shared = equal.sum(axis=1)
    dx = np.where(equal, (dout / np.maximum(shared, 1).astype(dout.dtype))[:, None], 0).astype(dout.dtype)
    alone = shared == 0
    first, second = index[:, 0], index[:, -1]
    half = np.where(first == second, dout, dout / dout.dtype.type(2))
    dx[at[alone], first[alone]] = half[alone]
    dx[at[alone], second[alone]] = half[alone]
    return back(dx)


@kernel("median")
def median(k):
    out, medians = _median(k, k.x("x"), _median_axes(k), ignore_nan=False)
    return {"out": out, "medians": medians}


@kernel("median_grad")
def median_grad(k):
    return {"x@GRAD": _median_grad(k, k.x("x"), _median_axes(k), k.x("out"), k.x("medians"), k.x("out@GRAD"))}


@kernel("nanmedian")
def nanmedian(k):
    out, index = _median(k, k.x("X"), list(k.attr("axis")), ignore_nan=True)
    return {"Out": out, "MedianIndex": index}


@kernel("nanmedian_grad")
def nanmedian_grad(k):
    return {"X@GRAD": _median_grad(k, k.x("X"), list(k.attr("axis")), k.x("Out"), k.x("MedianIndex"), k.x("Out@GRAD"))}
