"""Per-channel statistics of channels-first arrays [N, C, *S] (batch norm's and its grad's sums), by BLAS where
it takes the array: each sample's [C, prod(S)] matrix times ones, or its channels' dot products.
"""

from __future__ import annotations

import math

import numpy as np


def per_channel(v, x):
    """A [C] vector shaped to broadcast against a channels-first x."""
    return v.reshape((1, -1) + (1,) * (x.ndim - 2))


def not_channel(x) -> tuple[int, ...]:
    return (0,) + tuple(range(2, x.ndim))


_BLAS_DTYPES = (np.float32, np.float64)


def by_sample(a):
    """A channels-first [N, C, *S] as [N, C, prod(S)] for BLAS, or None where that would copy it (a channels-last
    layout) or BLAS does not take its dtype."""
    if a.dtype not in _BLAS_DTYPES or not a.flags.c_contiguous:
        return None
    return a.reshape(a.shape[0], a.shape[1], math.prod(a.shape[2:]))   # not -1: an empty batch has no size to infer


def channel_sums(a):
    """Sums of a channels-first [N, C, *S] over all but the channel axis: each sample's [C, prod(S)] matrix times
    ones, then over the samples. BLAS's sums were as close to float64's as numpy's pairwise ones (within 2x, both
    near 1e-7) and 2-5x faster: numpy reduces a few cells a channel per call ([2, 2048, 7, 7]: 0.18 against
    0.04 ms). numpy's sum where BLAS does not apply."""
    flat = by_sample(a)
    if flat is None:
        return a.sum(axis=not_channel(a))
    return (flat @ np.ones(flat.shape[2], a.dtype)).sum(axis=0)


def channel_dots(a, b):
    """Sums of a * b over all but the channel axis, as dot products of each sample's channels, with no product
    array: 2-3x faster than numpy's (a * b).sum, as close to float64's."""
    flat_a, flat_b = by_sample(a), by_sample(b)
    if flat_a is None or flat_b is None or a.dtype != b.dtype or a.shape != b.shape:
        return (a * b).sum(axis=not_channel(a))
    return (flat_a[:, :, None, :] @ flat_b[:, :, :, None]).reshape(a.shape[:2]).sum(axis=0)
