"""Kernels of gradc.ops.rearrange."""

from __future__ import annotations

import numpy as np

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


def _channels_last(x: np.ndarray, k) -> np.ndarray:
    """X as NHWC, whatever its data_format (the rearrangements below are written for NHWC)."""
    return x if k.attr("data_format") == "NHWC" else x.transpose(0, 2, 3, 1)


def _back(y: np.ndarray, k) -> np.ndarray:
    return np.ascontiguousarray(y if k.attr("data_format") == "NHWC" else y.transpose(0, 3, 1, 2))


def _shuffle_up(x: np.ndarray, r: int, k) -> np.ndarray:
    """[N, H, W, C r r] -> [N, H r, W r, C]: channel c r^2 + i r + j goes to pixel (h r + i, w r + j)."""
    n, h, w, c = _channels_last(x, k).shape
    y = _channels_last(x, k).reshape(n, h, w, c // (r * r), r, r).transpose(0, 1, 4, 2, 5, 3)
    return _back(y.reshape(n, h * r, w * r, c // (r * r)), k)


def _shuffle_down(x: np.ndarray, r: int, k) -> np.ndarray:
    """The inverse of _shuffle_up."""
    n, h, w, c = _channels_last(x, k).shape
    y = _channels_last(x, k).reshape(n, h // r, r, w // r, r, c).transpose(0, 1, 3, 5, 2, 4)
    return _back(y.reshape(n, h // r, w // r, c * r * r), k)


def _channel_shuffle(x: np.ndarray, groups: int, k) -> np.ndarray:
    """Channel g * (C / groups) + i goes to i * groups + g."""
    n, h, w, c = _channels_last(x, k).shape
    y = _channels_last(x, k).reshape(n, h, w, groups, c // groups).transpose(0, 1, 2, 4, 3)
    return _back(y.reshape(n, h, w, c), k)


kernel("pixel_shuffle")(lambda k: {"Out": _shuffle_up(k.x("X"), k.attr("upscale_factor"), k)})
kernel("pixel_shuffle_grad")(lambda k: {"X@GRAD": _shuffle_down(k.x("Out@GRAD"), k.attr("upscale_factor"), k)})
kernel("pixel_unshuffle")(lambda k: {"Out": _shuffle_down(k.x("X"), k.attr("downscale_factor"), k)})
kernel("pixel_unshuffle_grad")(lambda k: {"X@GRAD": _shuffle_up(k.x("Out@GRAD"), k.attr("downscale_factor"), k)})
kernel("channel_shuffle")(lambda k: {"Out": _channel_shuffle(k.x("X"), k.attr("groups"), k)})
kernel("channel_shuffle_grad")(lambda k: {"X@GRAD": _channel_shuffle(
    k.x("Out@GRAD"), k.x("Out@GRAD").shape[1 if k.attr("data_format") == "NCHW" else 3] // k.attr("groups"), k)})


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
    out = np.full((size, size), k.attr("padding_value"), x.dtype)
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
