"""Kernels of gradc.ops.shape."""

from __future__ import annotations

import numpy as np

from . import kernel


@kernel("split")
def split(k):
    x = k.x("X")
    axis = k.attr("axis") % x.ndim
    sections = list(k.attr("sections") or [])
    if not sections:
        return {"Out": np.split(x, len(k.out_names("Out")), axis=axis)}
    if -1 in sections:
        sections[sections.index(-1)] = x.shape[axis] - (sum(sections) + 1)
    return {"Out": np.split(x, np.cumsum(sections)[:-1], axis=axis)}


@kernel("concat")
def concat(k):
    xs = k.xs("X")
    return {"Out": np.concatenate(xs, axis=k.attr("axis") % xs[0].ndim)}


@kernel("concat_grad")
def concat_grad(k):
    xs, dout = k.xs("X"), k.x("Out@GRAD")
    axis = k.attr("axis") % dout.ndim
    bounds = np.cumsum([x.shape[axis] for x in xs])[:-1]
    return {"X@GRAD": [part.copy() for part in np.split(dout, bounds, axis=axis)]}
