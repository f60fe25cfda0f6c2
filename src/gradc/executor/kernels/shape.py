"""Kernels of gradc.ops.shape. Ops with an XShape output write an empty [0, *X.shape] array; their
grads take X's shape from it. Forward results are copies, never views of an input."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from ...ops import shape as dims
from ...shapes import normalize_axis
from ...shapes import value_error as fail
from . import kernel
from .broadcast import unbroadcast
from .index import ints


def _with_xshape(name: str, forward, backward=lambda dout, shape, k: dout.reshape(shape)) -> None:
    """forward(x, k) -> out; backward(dout, x_shape, k) -> dx, with X's shape taken from XShape."""
    kernel(name)(lambda k: {"Out": np.array(forward(k.x("X"), k)),
                            "XShape": np.zeros((0,) + k.x("X").shape, k.x("X").dtype)})
    kernel(name + "_grad")(lambda k: {"X@GRAD": np.array(backward(k.x("Out@GRAD"), k.x("XShape").shape[1:], k))})


_with_xshape("reshape2", lambda x, k: x.reshape(
    dims.reshape_dims(fail, list(x.shape), ints(k, ["ShapeTensor", "Shape"], "shape"))))
_with_xshape("transpose2", lambda x, k: x.transpose(k.attr("axis")),
             lambda dout, shape, k: dout.transpose(np.argsort([normalize_axis(a, len(shape)) for a in k.attr("axis")])))
_with_xshape("squeeze2", lambda x, k: x.reshape(dims.squeeze_dims(list(x.shape), k.attr("axes"))))
_with_xshape("unsqueeze2", lambda x, k: x.reshape(
    dims.unsqueeze_dims(list(x.shape), ints(k, ["AxesTensor", "AxesTensorList"], "axes"))))
_with_xshape("flatten_contiguous_range", lambda x, k: x.reshape(
    dims.flatten_dims(list(x.shape), k.attr("start_axis"), k.attr("stop_axis"))))


def _axis(k, rank: int) -> int:
    return normalize_axis(k.attr("axis"), rank)


def _stacked(arrays: list, k) -> np.ndarray:
    return np.stack(arrays, axis=_axis(k, arrays[0].ndim + 1))


def _unstacked(x: np.ndarray, k) -> list:
    axis = _axis(k, x.ndim)
    return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]


# stack and unstack are each other's gradient
kernel("stack")(lambda k: {"Y": _stacked(k.xs("X"), k)})
kernel("stack_grad")(lambda k: {"X@GRAD": _unstacked(k.x("Y@GRAD"), k)})
kernel("unstack")(lambda k: {"Y": _unstacked(k.x("X"), k)})
kernel("unstack_grad")(lambda k: {"X@GRAD": _stacked(k.xs("Y@GRAD"), k)})


@kernel("expand_v2")
def expand_v2(k):
    x = k.x("X")
    shape = dims.expand_dims_to(fail, list(x.shape), ints(k, ["Shape", "expand_shapes_tensor"], "shape"))
    return {"Out": np.broadcast_to(x, check_shape(shape, x.dtype, "the expanded tensor")).copy()}


@kernel("expand_as_v2")
def expand_as_v2(k):
    x = k.x("X")
    target = list(k.x("Y").shape) if k.has("Y") else list(k.attr("target_shape"))
    shape = dims.expand_dims_to(fail, list(x.shape), target)
    return {"Out": np.broadcast_to(x, check_shape(shape, x.dtype, "the expanded tensor")).copy()}


@kernel("expand_v2_grad", "expand_as_v2_grad")
def expand_grad(k):
    return {"X@GRAD": unbroadcast(k.x("Out@GRAD"), k.x("X").shape)}


@kernel("tile")
def tile(k):
    x, reps = k.x("X"), ints(k, ["RepeatTimes", "repeat_times_tensor"], "repeat_times")
    if any(r < 0 for r in reps):
        raise ValueError(f"the repeat times {reps} must not be negative")
    rank = max(x.ndim, len(reps))
    dims_, reps_ = [1] * (rank - x.ndim) + list(x.shape), [1] * (rank - len(reps)) + list(reps)
    check_shape([d * r for d, r in zip(dims_, reps_)], x.dtype, "the tiled tensor")
    return {"Out": np.tile(x, reps)}


@kernel("tile_grad")
def tile_grad(k):
    """Out@GRAD viewed as [rep0, x0, rep1, x1, ...]: summing the rep axes undoes the tiling."""
    x, dout = k.x("X"), k.x("Out@GRAD")
    dims = (1,) * (dout.ndim - x.ndim) + x.shape
    reps = [o // d for o, d in zip(dout.shape, dims)]
    split = dout.reshape([n for pair in zip(reps, dims) for n in pair])
    return {"X@GRAD": split.sum(axis=tuple(range(0, split.ndim, 2))).reshape(x.shape)}


def _axis_of(k, rank: int) -> int:
    """split/concat's axis: AxisTensor wins over the attribute."""
    tensor = k.optional("AxisTensor")
    return normalize_axis(int(np.ravel(tensor)[0]) if tensor is not None else k.attr("axis"), rank)


@kernel("split")
def split(k):
    x = k.x("X")
    axis = _axis_of(k, x.ndim)
    sections = ints(k, ["SectionsTensorList"], "sections")
    sizes = dims.split_sizes(fail, x.shape[axis], len(k.out_names("Out")), sections)
    return {"Out": [part.copy() for part in np.split(x, np.cumsum(sizes)[:-1], axis=axis)]}


@kernel("concat")
def concat(k):
    xs = k.xs("X")
    return {"Out": np.concatenate(xs, axis=_axis_of(k, xs[0].ndim))}


@kernel("concat_grad")
def concat_grad(k):
    xs, dout = k.xs("X"), k.x("Out@GRAD")
    axis = _axis_of(k, dout.ndim)
    bounds = np.cumsum([x.shape[axis] for x in xs])[:-1]
    return {"X@GRAD": [part.copy() for part in np.split(dout, bounds, axis=axis)]}
