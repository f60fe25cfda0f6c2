"""Kernels of gradc.ops.rearrange."""

from __future__ import annotations

import numpy as np

from ...shapes import normalize_axis
from . import kernel
from .index import ints


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
