"""Kernels of gradc.ops.tensor_views: each view is a copy of the elements it reads, taken from its input's
row-major storage."""

from __future__ import annotations

import numpy as np

from . import kernel
from .tensor import numpy_dtype


def strided_positions(k, size: int, itemsize: int) -> np.ndarray:
    """The flat positions a strided view of ``dims`` reads: offset (in bytes) plus each index times its stride."""
    dims, stride, offset = list(k.attr("dims")), list(k.attr("stride")), k.attr("offset")
    if offset % itemsize:
        raise ValueError(f"offset {offset} is not a whole number of {itemsize}-byte elements (it counts bytes)")
    positions = offset // itemsize + sum(np.arange(d).reshape([-1] + [1] * (len(dims) - i - 1)) * s
                                         for i, (d, s) in enumerate(zip(dims, stride)))
    positions = np.broadcast_to(positions, dims)
    if positions.size and (positions.min() < 0 or positions.max() >= size):
        raise ValueError(f"a view of dims {dims}, stride {stride}, offset {offset} reads outside {size} elements")
    return positions


@kernel("view_shape")
def view_shape(k):
    return {"out": np.array(k.x("input"), copy=True).reshape(list(k.attr("dims")))}


kernel("view_shape_grad")(lambda k: {"input@GRAD": np.array(k.x("out@GRAD")).reshape(k.x("input").shape)})


@kernel("view_dtype")
def view_dtype(k):
    x = np.ascontiguousarray(k.x("input"))
    if x.ndim == 0:
        raise ValueError("view_dtype needs input of rank >= 1")
    out = x.view(numpy_dtype(k.attr("dtype")))   # numpy rescales the last dim as Paddle does
    return {"out": out.copy()}


@kernel("as_strided")
def as_strided(k):
    x = k.x("input")
    return {"out": x.reshape(-1)[strided_positions(k, x.size, x.dtype.itemsize)]}


@kernel("as_strided_grad")
def as_strided_grad(k):
    """dOut added back at each position read: an element read twice gets both grads."""
    x, dout = k.x("input"), k.x("out@GRAD")
    grad = np.zeros(x.size, dout.dtype)
    np.add.at(grad, strided_positions(k, x.size, x.dtype.itemsize).reshape(-1), dout.reshape(-1))
    return {"input@GRAD": grad.reshape(x.shape)}


def _selected(k, x: np.ndarray) -> tuple:
    """The index tuple of index_select_strided's slice of x (a negative index counts from the end)."""
    axis, index = k.attr("axis") % x.ndim, k.attr("index")
    if not -x.shape[axis] <= index < x.shape[axis]:
        raise ValueError(f"index {index} is outside axis {axis} of size {x.shape[axis]}")
    return (slice(None),) * axis + (index % x.shape[axis],)


kernel("index_select_strided")(lambda k: {"out": np.array(k.x("x")[_selected(k, k.x("x"))], copy=True)})


@kernel("index_select_strided_grad")
def index_select_strided_grad(k):
    x, dout = k.x("x"), k.x("out@GRAD")
    grad = np.zeros(x.shape, dout.dtype)
    grad[_selected(k, x)] = dout
    return {"x@GRAD": grad}


@kernel("set")
def set_(k):
    source = k.x("source")
    return {"out": source.reshape(-1)[strided_positions(k, source.size, source.dtype.itemsize)]}
