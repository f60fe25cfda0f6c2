"""Kernels of gradc.ops.pad. Every mode is a gather: each output position along a padded dim copies one input
position (or, in constant mode outside the input, the pad value), so one rule gives the forward, a negative
(cropping) padding, and the grad (a scatter-add of Out@GRAD back to the positions read)."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from ...ops.pad import pad3d_pairs, pad_pairs
from . import kernel
from .index import ints, scatter_add


def _source_index(mode: str, size: int, before: int, after: int) -> np.ndarray:
    """For each output position along a padded dim, the input position it copies (constant mode: possibly
    outside [0, size), where the pad value goes)."""
    i = np.arange(-before, size + after)
    if mode == "reflect":
        i = np.abs(i)
        return np.where(i > size - 1, 2 * (size - 1) - i, i)
    if mode == "replicate":
        return np.clip(i, 0, size - 1)
    if mode == "circular":
        return i % size
    return i


def _padded(x: np.ndarray, pairs, mode: str, value) -> np.ndarray:
    check_shape([n + a + b for n, (a, b) in zip(x.shape, pairs)], x.dtype, "the padded tensor")
    out = x
    for axis, (before, after) in enumerate(pairs):
        if before or after:
            index = _source_index(mode, x.shape[axis], before, after)
            inside = (index >= 0) & (index < x.shape[axis])
            out = np.take(out, np.clip(index, 0, max(x.shape[axis] - 1, 0)), axis=axis)
            if not inside.all():
                shape = [1] * x.ndim
                shape[axis] = index.size
                out = np.where(inside.reshape(shape), out, np.asarray(value, x.dtype))
    return out


def _unpadded(dout: np.ndarray, shape, pairs, mode: str) -> np.ndarray:
    """The adjoint of _padded: each output grad adds into the input position it was copied from."""
    grad = dout
    for axis, (before, after) in reversed(list(enumerate(pairs))):
        if before or after:
            index = _source_index(mode, shape[axis], before, after)
            inside = (index >= 0) & (index < shape[axis])
            grad = scatter_add(np.compress(inside, grad, axis=axis), index[inside], shape[axis], axis)
    return grad


@kernel("pad")
def pad(k):
    x, paddings = k.x("X"), k.attr("paddings")
    if len(paddings) != 2 * x.ndim:
        raise ValueError(f"pad needs 2 * rank = {2 * x.ndim} paddings for X of shape {list(x.shape)}, got {paddings}")
    return {"Out": _padded(x, pad_pairs(paddings), "constant", k.attr("pad_value"))}


@kernel("pad_grad")
def pad_grad(k):
    dout, pairs = k.x("Out@GRAD"), pad_pairs(k.attr("paddings"))
    shape = [n - a - b for n, (a, b) in zip(dout.shape, pairs)]
    return {"X@GRAD": _unpadded(dout, shape, pairs, "constant")}


def _pad3d_pairs(k, shape):
    """pad3d's pairs, checked against X (Paddings may bring values inference never saw)."""
    pairs = pad3d_pairs(ints(k, ["Paddings"], "paddings"), k.attr("data_format"))
    if any(n + a + b < 0 for n, (a, b) in zip(shape, pairs)):
        raise ValueError(f"paddings {pairs} cut more than the whole of {list(shape)}")
    if k.attr("mode") == "reflect" and any(max(a, b) >= n for n, (a, b) in zip(shape, pairs) if a or b):
        raise ValueError(f"reflect paddings {pairs} must be smaller than the dims they pad in {list(shape)}")
    return pairs


@kernel("pad3d")
def pad3d(k):
    x = k.x("X")
    return {"Out": _padded(x, _pad3d_pairs(k, x.shape), k.attr("mode"), k.attr("value"))}


@kernel("pad3d_grad")
def pad3d_grad(k):
    x = k.x("X")
    return {"X@GRAD": _unpadded(k.x("Out@GRAD"), x.shape, _pad3d_pairs(k, x.shape), k.attr("mode"))}
