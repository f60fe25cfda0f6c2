"""Max pooling on strided views of the input, one view per window cell (a tap), for every max pool whose windows
share one size and one stride (all but adaptive ones): the input padded with the value of an empty window cell
where windows hang over its edges, np.maximum along one axis at a time for the forward, a masked copy or add per
tap for the grad, which reads the forward's maxima (Out) rather than taking them again. No window is gathered:
the forward is 3-8x faster than the general kernel's (gradc.executor.kernels.pool_windows), the grad as fast on
ResNet's 3x3 stride-2 pool and up to 1.6x faster on others, and neither needs memory for the windows.

The results are the general kernels' bit for bit:
- the maxima are taken along the last axis first, so ties (+0.0 and -0.0) resolve as in the general kernel's
  row-major order of a window's cells (a padding cell holds the fill value, which a real cell can only tie with
  bitwise);
- each window's grad goes to its first maximum in that order;
- where windows overlap, an input's grads are summed in float64 in the order of the windows, as np.bincount sums
  them (taps in reverse row-major order meet an input's windows in row-major order), then rounded; where they do
  not, a grad is copied, -0.0 stored as +0.0 as a scatter onto zeros gives.
A window whose maximum is not above the fill value (all padding, -inf, NaN) is left to the general grad kernel.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from .conv_columns import padded

PADDLE_MAX_POOL_INIT = -float(np.finfo(np.float32).max)   # what an empty max window gives, in any dtype (Paddle)


class Taps(NamedTuple):
    k_sizes: tuple[int, ...]
    strides: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]   # fill cells before and after each spatial axis
    out: tuple[int, ...]


def tap_geometry(x: np.ndarray, ksize, strides, pads, out) -> Taps | None:
    """The taps of windows of ``ksize`` every ``strides`` starting ``pads[2 i]`` cells before each axis (the general
    kernel's windows [o * s - pad, o * s - pad + k) clipped to the input). None for non-float data, and where no
    window along an axis fits the input whole: the general kernel then fills no window of the longest length
    there, where the fill would be in every padded one."""
    if x.dtype.kind != "f" or min(*ksize, *strides) < 1 or min(pads) < 0:
        return None
    for size, k, s, before, o in zip(x.shape[2:], ksize, strides, pads[0::2], out):
        first = -(-before // s)   # the first window starting inside the input: the first that may fit
        if first >= o or first * s - before + k > size:
            return None
    spans = [(before, max(0, (o - 1) * s + k - before - size))
             for size, k, s, before, o in zip(x.shape[2:], ksize, strides, pads[0::2], out)]
    return Taps(tuple(ksize), tuple(strides), tuple(spans), tuple(out))


def _padded(x: np.ndarray, taps: Taps) -> np.ndarray:
    if not any(before or after for before, after in taps.pads):
        return x
    return padded(x, taps.pads, x.dtype.type(PADDLE_MAX_POOL_INIT))


def _views(taps: Taps) -> list[tuple]:
    """Each tap's strided view index of the padded input ([N, C, *out]), in row-major order."""
    return [(Ellipsis, *(slice(c, c + (o - 1) * s + 1, s) for c, o, s in zip(cell, taps.out, taps.strides)))
            for cell in itertools.product(*map(range, taps.k_sizes))]


def _max(xp: np.ndarray, taps: Taps) -> np.ndarray:
    """Each window's maximum, one axis at a time from the last: sum(k - 1) np.maximum calls, not prod(k) - 1. A
    window's maxima tie only as +0.0 and -0.0; which of them wins is the tie rule of np.maximum applied in row-major
    order either way, as the windows' rows are taken whole before the rows are compared."""
    dims = len(taps.out)
    for axis in reversed(range(dims)):
        k, s, o = taps.k_sizes[axis], taps.strides[axis], taps.out[axis]
        lead = (slice(None),) * (xp.ndim - dims + axis)
        out = xp[(*lead, slice(0, (o - 1) * s + 1, s))].copy()
        for cell in range(1, k):
            np.maximum(out, xp[(*lead, slice(cell, cell + (o - 1) * s + 1, s))], out=out)
        xp = out
    return xp


def taps_max(x: np.ndarray, taps: Taps) -> np.ndarray:
    """Each window's maximum."""
    return _max(_padded(x, taps), taps)


def taps_max_grad(x: np.ndarray, dout: np.ndarray, taps: Taps, out: np.ndarray | None = None) -> np.ndarray | None:
    """The grad of the input, each window's to its first maximum; None (the general kernel's case) when a window's
    maximum is not above the fill value, or ``dout`` is not shaped like the output. ``out``, the forward's maxima
    (as Paddle's grad kernel reads them), saves taking them again; where a window holds no value equal to its ``out``
    (an Out that is not x's), the maxima are taken from x."""
    xp, views = _padded(x, taps), _views(taps)
    given = out is not None and out.shape == dout.shape and out.dtype == xp.dtype
    best = out if given else _max(xp, taps)
    if dout.shape != best.shape or not np.all(best > xp.dtype.type(PADDLE_MAX_POOL_INIT)):
        return None if not given else taps_max_grad(x, dout, taps)
    if all(s >= k for s, k in zip(taps.strides, taps.k_sizes)):   # windows apart: a cell gets one grad at most
        dx, grad, zero = np.zeros(xp.shape, dtype=dout.dtype), dout + dout.dtype.type(0), dout.dtype.type(0)
        taken, first = np.zeros(best.shape, bool), np.empty(best.shape, bool)
        for view in views:   # np.where and a store: np.copyto with where= is 1.3x slower
            np.greater(np.equal(xp[view], best, out=first), taken, out=first)   # a maximum, and the window's first
            taken |= first
            dx[view] = np.where(first, grad, zero)
        if given and not taken.all():
            return taps_max_grad(x, dout, taps)
        return dx if xp is x else np.ascontiguousarray(dx[(Ellipsis, *_inside(taps, x.shape[2:]))])
    pick = _first_max(xp, views, best)
    if given and (pick == len(views)).any():
        return taps_max_grad(x, dout, taps)
    return _scatter(x.shape, dout, pick, taps)


def _first_max(xp: np.ndarray, views: list[tuple], best: np.ndarray) -> np.ndarray:
    """Each window's first tap holding its maximum: taps minus the highest (taps - tap) of a tap equal to it, in
    whole-array maxima (np.copyto of the tap where equal, tap by tap, is 4x slower)."""
    count = len(views)
    dtype = np.min_scalar_type(count)
    score, hit = np.zeros(best.shape, dtype), np.empty(best.shape, bool)
    for tap, view in enumerate(views):
        np.equal(xp[view], best, out=hit)
        np.maximum(score, hit.view(np.uint8) * dtype.type(count - tap), out=score)
    return dtype.type(count) - score


def _inside(taps: Taps, sizes) -> tuple[slice, ...]:
    return tuple(slice(before, before + size) for (before, _), size in zip(taps.pads, sizes))


def _scatter(shape: tuple[int, ...], dout: np.ndarray, pick: np.ndarray, taps: Taps) -> np.ndarray:
    """Each window's grad added to the input cell of its tap ``pick``, by np.bincount in the windows' order, in
    float64, as the general kernel adds them."""
    sizes, dims = shape[2:], len(taps.out)
    strides = [int(np.prod(sizes[axis + 1:])) for axis in range(dims)]   # of an input plane, in cells
    starts = sum(((np.arange(o) * s - before) * stride).reshape([-1 if a == axis else 1 for a in range(dims)])
                 for axis, (o, s, (before, _), stride) in enumerate(zip(taps.out, taps.strides, taps.pads, strides)))
    cells = np.indices(taps.k_sizes).reshape(dims, -1).T @ np.array(strides)   # each tap's offset in its window
    planes = np.arange(shape[0] * shape[1]).reshape(shape[0], shape[1], *[1] * dims) * int(np.prod(sizes))
    target = np.take(cells, pick)   # in place from here: adding three whole arrays took 5x longer
    target += planes
    target += starts
    dx = np.bincount(target.ravel(), weights=dout.ravel(), minlength=int(np.prod(shape)))
    return dx.astype(dout.dtype, copy=False).reshape(shape)
