"""Kernels of gradc.ops.reduce."""

from __future__ import annotations

import numpy as np

from ...ops.reduce import reduced_axes
from . import kernel


def _axes(k, x):
    return reduced_axes(k.attr, x.ndim)


def _expand(k, dout, x):
    """The output grad broadcast back over the reduced axes of X."""
    axes = _axes(k, x)
    if not k.attr("keep_dim"):
        dout = np.expand_dims(dout, axes) if axes else dout
    return np.broadcast_to(dout, x.shape)


@kernel("reduce_sum")
def reduce_sum(k):
    x = k.x("X")
    return {"Out": np.sum(x, axis=_axes(k, x), keepdims=k.attr("keep_dim"))}


@kernel("reduce_sum_grad")
def reduce_sum_grad(k):
    x = k.x("X")
    return {"X@GRAD": _expand(k, k.x("Out@GRAD"), x).copy()}


@kernel("reduce_mean")
def reduce_mean(k):
    x = k.x("X")
    return {"Out": np.mean(x, axis=_axes(k, x), keepdims=k.attr("keep_dim"))}


@kernel("reduce_mean_grad")
def reduce_mean_grad(k):
    x = k.x("X")
    count = int(np.prod([x.shape[a] for a in _axes(k, x)]))
    return {"X@GRAD": _expand(k, k.x("Out@GRAD"), x) / count}


@kernel("mean")
def mean(k):
    return {"Out": np.mean(k.x("X"))}


@kernel("mean_grad")
def mean_grad(k):
    x = k.x("X")
    return {"X@GRAD": np.full(x.shape, k.x("Out@GRAD").reshape(()) / max(x.size, 1), dtype=x.dtype)}
