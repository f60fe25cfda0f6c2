"""Kernels of gradc.ops.index_elementwise: each op reads or writes x's row-major elements at the positions of
its strided view (``view_positions``)."""

from __future__ import annotations

import numpy as np

from ...ops.index_elementwise import split_index_dims
from . import kernel
from .broadcast import unbroadcast


def view_positions(k, x: np.ndarray, indices: list, sizes: list[int], index_strides: list[int]) -> np.ndarray:
    """The flat position in x of each element of the view, shaped input_dims."""
    dims, strides, item = list(k.attr("input_dims")), list(k.attr("input_strides")), x.dtype.itemsize
    positions = np.full(dims, k.attr("slice_offset") // item, np.int64)
    for axis, (dim, stride) in enumerate(zip(dims, strides)):
        positions += np.arange(dim).reshape([-1] + [1] * (len(dims) - axis - 1)) * stride
    for index, size, stride in zip(indices, sizes, index_strides):
        if index.size and (index.min() < -size or index.max() >= size):
            raise ValueError(f"index {index.min()}..{index.max()} is outside [-{size}, {size})")
        positions += np.broadcast_to(np.where(index < 0, index + size, index), dims) * (stride // item)
    if positions.size and (positions.min() < 0 or positions.max() >= x.size):
        raise ValueError(f"the view (input_dims {dims}, input_strides {strides}) reaches element "
                         f"{positions.min() if positions.min() < 0 else positions.max()} of x's {x.size}")
    return positions


def _positions(k, x, strides_attr: str = "index_strides"):
    sizes, shape = split_index_dims(list(k.attr("index_dims")))
    return view_positions(k, x, [i.reshape(shape) for i in k.xs("index")], sizes, list(k.attr(strides_attr)))


def _get_positions(k, x):
    return _positions(k, x, "index_stride")


kernel("index_elementwise_get")(lambda k: {"Out": k.x("x").reshape(-1)[_get_positions(k, k.x("x"))]})


@kernel("index_elementwise_get_grad")
def index_elementwise_get_grad(k):
    x, dout = k.x("x"), k.x("Out@GRAD")
    grad, positions = np.zeros(x.size, dout.dtype), _get_positions(k, x).reshape(-1)
    if k.attr("accumulate"):
        np.add.at(grad, positions, dout.reshape(-1))
    else:
        grad[positions] = dout.reshape(-1)
    return {"x@GRAD": grad.reshape(x.shape)}


def _put(x: np.ndarray, positions: np.ndarray, value) -> np.ndarray:
    out = x.copy()
    out.reshape(-1)[positions.reshape(-1)] = np.broadcast_to(np.asarray(value, x.dtype), positions.shape).reshape(-1)
    return out


@kernel("index_elementwise_put")
def index_elementwise_put(k):
    x = k.x("x")
    value = k.x("ValueTensor").reshape(()) if k.has("ValueTensor") else k.attr("value")
    return {"out": _put(x, _positions(k, x), value)}


kernel("index_elementwise_put_with_tensor")(
    lambda k: {"Out": _put(k.x("x"), _positions(k, k.x("x")), k.x("value"))})
kernel("index_elementwise_put_grad")(
    lambda k: {"x@GRAD": _put(k.x("out@GRAD"), _positions(k, k.x("x")), 0)})


@kernel("index_elementwise_put_with_tensor_grad")
def index_elementwise_put_with_tensor_grad(k):
    dout, positions = k.x("Out@GRAD"), _positions(k, k.x("x"))
    return {"x@GRAD": _put(dout, positions, 0),
            "value@GRAD": unbroadcast(dout.reshape(-1)[positions], np.shape(k.x("value")))}
