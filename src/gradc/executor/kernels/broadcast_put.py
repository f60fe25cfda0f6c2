"""Kernels of gradc.ops.broadcast_put: broadcast_tensors and index_put with their grads."""

from __future__ import annotations

import numpy as np

from . import kernel
from .broadcast import unbroadcast


@kernel("broadcast_tensors")
def broadcast_tensors(k):
    return {"Out": [out.copy() for out in np.broadcast_arrays(*k.xs("X"))]}


@kernel("broadcast_tensors_grad")
def broadcast_tensors_grad(k):
    return {"X@GRAD": [unbroadcast(dout, np.shape(x)) for x, dout in zip(k.xs("X"), k.xs("Out@GRAD"))]}


def _picked(k, x: np.ndarray):
    """The index tuple the indices pick x's entries by (a bool mask, or int tensors broadcast together)."""
    indices = k.xs("indices")
    if indices[0].dtype == np.bool_:
        mask = indices[0]
        if mask.shape != x.shape[:mask.ndim]:
            raise ValueError(f"index_put's bool mask {list(mask.shape)} must match the leading dims of x "
                             f"{list(x.shape)}")
        return np.nonzero(mask)
    ints = np.broadcast_arrays(*[i.astype(np.int64) for i in indices])
    for axis, index in enumerate(ints):
        if index.size and (index.min() < -x.shape[axis] or index.max() >= x.shape[axis]):
            raise ValueError(f"index_put index {index.min()}..{index.max()} is out of range for dim {axis} "
                             f"of x {list(x.shape)}")
    return tuple(ints)


@kernel("index_put")
def index_put(k):
    x, value = k.x("x"), k.x("value")
    where = _picked(k, x)
    out = x.copy()
    if k.attr("accumulate"):
        np.add.at(out, where, np.broadcast_to(value, out[where].shape))
    else:
        out[where] = value
    return {"out": out}


@kernel("index_put_grad")
def index_put_grad(k):
    x, dout = k.x("x"), k.x("out@GRAD")
    where = _picked(k, x)

    def x_grad():
        dx = dout.copy()
        if not k.attr("accumulate"):
            dx[where] = 0
        return dx

    return k.grads({"x@GRAD": x_grad, "value@GRAD": lambda: unbroadcast(dout[where], np.shape(k.x("value")))})
