"""Kernels of gradc.ops.rearrange."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from ...ops.rearrange import diagonal_length
from ...shapes import normalize_axis
from . import kernel
from .index import ints, scatter_add


@kernel("flip")
def flip(k):
    x = k.x("X")
    return {"Out": np.flip(x, axis=tuple(normalize_axis(a, x.ndim) for a in k.attr("axis"))).copy()}


def _rolled(x: np.ndarray, k, sign: int) -> np.ndarray:
    """np.roll by the op's shifts (ShiftsTensor wins); no axis rolls the flattened tensor."""
    shifts = [sign * s for s in ints(k, ["ShiftsTensor"], "shifts")]
    axes = [normalize_axis(a, x.ndim) for a in k.attr("axis")]
    if not axes:
        return np.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return np.roll(x, shifts, axis=axes)


kernel("roll")(lambda k: {"Out": _rolled(k.x("X"), k, 1)})
kernel("roll_grad")(lambda k: {"X@GRAD": _rolled(k.x("Out@GRAD"), k, -1)})


def _triangle(x: np.ndarray, k) -> np.ndarray:
    """tril (lower) or triu of the last two dims, diagonal counted as numpy's k."""
    rows, cols = np.arange(x.shape[-2])[:, None], np.arange(x.shape[-1])
    offset = cols - rows
    keep = offset <= k.attr("diagonal") if k.attr("lower") else offset >= k.attr("diagonal")
    return np.where(keep, x, np.zeros((), x.dtype))


kernel("tril_triu")(lambda k: {"Out": _triangle(k.x("X"), k)})
kernel("tril_triu_grad")(lambda k: {"X@GRAD": _triangle(k.x("Out@GRAD"), k)})


@kernel("meshgrid")
def meshgrid(k):
    return {"Out": [grid.copy() for grid in np.meshgrid(*[np.reshape(x, -1) for x in k.xs("X")], indexing="ij")]}


@kernel("meshgrid_grad")
def meshgrid_grad(k):
    """Each input's grad sums its output's grad over every other dim."""
    xs, douts = k.xs("X"), k.xs("Out@GRAD")
    rank = len(xs)
    grads = [dout.sum(axis=tuple(d for d in range(rank) if d != i)).reshape(np.shape(x))
             for i, (x, dout) in enumerate(zip(xs, douts))]
    return {"X@GRAD": grads}


@kernel("unbind")
def unbind(k):
    x = k.x("X")
    axis = normalize_axis(k.attr("axis"), x.ndim)
    return {"Out": [np.take(x, i, axis=axis) for i in range(x.shape[axis])]}


def _repeats(k, x: np.ndarray) -> tuple[np.ndarray | int, int]:
    """repeat_interleave's repeats (RepeatsTensor wins over Repeats) and its axis."""
    dim = normalize_axis(k.attr("dim"), x.ndim)
    tensor = k.optional("RepeatsTensor")
    if tensor is None:
        return k.attr("Repeats"), dim
    repeats = np.ravel(tensor).astype(np.int64)
    if repeats.size != (x.shape[dim] if x.ndim else 1) or (repeats < 0).any():
        raise ValueError(f"RepeatsTensor must hold a count >= 0 per element of dim {dim} of {list(x.shape)}, "
                         f"got {repeats.tolist()}")
    return repeats, dim


@kernel("repeat_interleave")
def repeat_interleave(k):
    x = k.x("X")
    repeats, dim = _repeats(k, x)
    count = int(np.sum(np.broadcast_to(repeats, (x.shape[dim] if x.ndim else 1,))))
    check_shape([x.size // max(x.shape[dim], 1) * count if x.ndim else count], x.dtype, "the repeated tensor")
    return {"Out": np.repeat(x, repeats, axis=dim if x.ndim else None)}


@kernel("repeat_interleave_grad")
def repeat_interleave_grad(k):
    """Each element's grad adds up the grads of its copies."""
    x, dout = k.x("X"), k.x("Out@GRAD")
    repeats, dim = _repeats(k, x)
    if x.ndim == 0:
        return {"X@GRAD": dout.sum().reshape(())}
    owner = np.repeat(np.arange(x.shape[dim]), repeats)
    return {"X@GRAD": scatter_add(dout, owner, x.shape[dim], dim)}


def _diagonal_index(rows: int, cols: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    start = np.arange(diagonal_length(rows, cols, offset))
    return (start, start + offset) if offset >= 0 else (start - offset, start)


@kernel("diag_v2")
def diag_v2(k):
    x, offset = k.x("X"), k.attr("offset")
    if x.ndim == 2:
        return {"Out": x[_diagonal_index(*x.shape, offset)].copy()}
    size = x.size + abs(offset)
    out = np.full(check_shape((size, size), x.dtype, "the diagonal matrix"), k.attr("padding_value"), x.dtype)
    out[_diagonal_index(size, size, offset)] = np.ravel(x)
    return {"Out": out}


@kernel("diag_v2_grad")
def diag_v2_grad(k):
    x, dout = k.x("X"), k.x("Out@GRAD")
    if x.ndim == 2:
        dx = np.zeros(x.shape, dout.dtype)
        dx[_diagonal_index(*x.shape, k.attr("offset"))] = dout
        return {"X@GRAD": dx}
    return {"X@GRAD": dout[_diagonal_index(*dout.shape, k.attr("offset"))].reshape(x.shape)}
