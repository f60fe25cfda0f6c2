"""Kernels of gradc.ops.sort."""

from __future__ import annotations

import numpy as np

from ...shapes import normalize_axis
from . import kernel


def _sort_order(x: np.ndarray, axis: int, descending: bool = False) -> np.ndarray:
    """The stable order along ``axis``: ties keep their original order, descending too."""
    keys = x.astype(np.int64) if x.dtype.kind in "ub" else x
    return np.argsort(-keys if descending else keys, axis=axis, kind="stable")


def _scattered(x: np.ndarray, indices: np.ndarray, dout: np.ndarray, axis: int) -> np.ndarray:
    """Zeros like X with each Out@GRAD at the position its index names (the grad of a pick along ``axis``)."""
    dx = np.zeros(x.shape, dout.dtype)
    np.put_along_axis(dx, indices.astype(np.int64), dout, axis=axis)
    return dx


@kernel("argsort")
def argsort(k):
    x = k.x("X")
    axis = normalize_axis(k.attr("axis"), x.ndim)
    order = _sort_order(x, axis, k.attr("descending"))
    return {"Out": np.take_along_axis(x, order, axis=axis), "Indices": order.astype(np.int64)}


@kernel("argsort_grad")
def argsort_grad(k):
    x = k.x("X")
    return {"X@GRAD": _scattered(x, k.x("Indices"), k.x("Out@GRAD"), normalize_axis(k.attr("axis"), x.ndim))}


def _kth_axis(k, x: np.ndarray) -> int:
    return normalize_axis(k.attr("axis"), max(x.ndim, 1))


@kernel("kthvalue")
def kthvalue(k):
    x = k.x("X")
    axis, flat = _kth_axis(k, x), x.reshape(1) if x.ndim == 0 else x
    if not 1 <= k.attr("k") <= flat.shape[axis]:
        raise ValueError(f"k {k.attr('k')} must be in [1, {flat.shape[axis]}]")
    index = np.take(_sort_order(flat, axis), [k.attr("k") - 1], axis=axis)
    value = np.take_along_axis(flat, index, axis=axis)
    shape = [1 if i == axis else d for i, d in enumerate(x.shape) if k.attr("keepdim") or i != axis]
    return {"Out": value.reshape(shape), "Indices": index.reshape(shape).astype(np.int64)}


@kernel("kthvalue_grad")
def kthvalue_grad(k):
    x = k.x("X")
    axis, flat = _kth_axis(k, x), x.reshape(1) if x.ndim == 0 else x
    keep = [1 if i == axis else d for i, d in enumerate(flat.shape)]   # Out with the axis kept (size 1)
    dx = _scattered(flat, k.x("Indices").reshape(keep), k.x("Out@GRAD").reshape(keep), axis)
    return {"X@GRAD": dx.reshape(x.shape)}


@kernel("searchsorted")
def searchsorted(k):
    seq, values = k.x("SortedSequence"), k.x("Values")
    side = "right" if k.attr("right") else "left"
    if seq.ndim <= 1:
        out = np.searchsorted(seq, values, side=side)
    else:
        rows = seq.reshape(-1, seq.shape[-1])
        out = np.stack([np.searchsorted(row, v, side=side)
                        for row, v in zip(rows, values.reshape(len(rows), -1))]).reshape(values.shape)
    return {"Out": out.astype(np.int32 if k.attr("out_int32") else np.int64)}
