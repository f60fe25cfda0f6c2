"""The layouts of a convolution's operands: the windows of its padded input (im2col's columns, a strided view
copied once into the matmul layout, by group and either for the whole batch or for each sample) and their adjoint,
col2im, which adds columns back where their windows read. gradc.executor.kernels.conv multiplies them; the vision
kernels' unfold and fold are im2col and col2im themselves.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view


class Geometry(NamedTuple):
    strides: tuple
    pads: tuple        # before, after per spatial dim
    dilations: tuple
    groups: int


def padded(x, pairs, fill=0):
    """x [N, C, *S] with (before, after) cells of ``fill`` around each spatial axis, as np.pad gives it (a new
    C-contiguous array: the columns never share x's memory), without np.pad's setup: 20 µs, as much as a small
    layer's whole convolution."""
    if not any(before or after for before, after in pairs):
        return np.array(x, order="C")
    out = np.full((*x.shape[:2], *(size + before + after for size, (before, after) in zip(x.shape[2:], pairs))),
                  fill, dtype=x.dtype)
    out[(Ellipsis, *(slice(before, before + size) for size, (before, _) in zip(x.shape[2:], pairs)))] = x
    return out


def windows(xp, k_sizes, geo: Geometry):
    """The windows of xp [N, C, *S] as a read-only strided view [N, C, *out, *kernel]: sliding_window_view's
    windows every stride, their cells every dilation, made in one as_strided call (sliding_window_view and the
    slicing cost 10-15 µs)."""
    dims, sizes = len(k_sizes), xp.shape[2:]
    spans = [(k - 1) * d + 1 for k, d in zip(k_sizes, geo.dilations)]
    if min(*geo.strides, *geo.dilations) < 1 or not all(0 < span <= size for span, size in zip(spans, sizes)):
        win = sliding_window_view(xp, spans, axis=tuple(range(2, 2 + dims)))   # it says what does not fit
        return win[(slice(None), slice(None), *(slice(None, None, s) for s in geo.strides),
                    *(slice(None, None, d) for d in geo.dilations))]
    out = [(size - span) // s + 1 for size, span, s in zip(sizes, spans, geo.strides)]
    steps = xp.strides[2:]
    return as_strided(xp, (*xp.shape[:2], *out, *k_sizes),
                      (*xp.strides[:2], *(t * s for t, s in zip(steps, geo.strides)),
                       *(t * d for t, d in zip(steps, geo.dilations))), writeable=False)


def _grouped_windows(x, k_sizes, geo: Geometry):
    """The windows of x [N, C, *S] by group, a strided view [N, groups, C/g, *out, *kernel], and the out sizes."""
    dims = len(k_sizes)
    win = windows(padded(x, [(geo.pads[2 * i], geo.pads[2 * i + 1]) for i in range(dims)]), k_sizes, geo)
    n, c, out = win.shape[0], win.shape[1], win.shape[2:2 + dims]
    return win.reshape(n, geo.groups, c // geo.groups, *out, *k_sizes), tuple(out)


def im2col(x, k_sizes, geo: Geometry):
    """Windows of x [N, C, *S] as [groups, C/g * prod(kernel), N * prod(out)], and the out sizes."""
    dims = len(k_sizes)
    win, out = _grouped_windows(x, k_sizes, geo)
    n, g, cg = win.shape[:3]
    cols = win.transpose(1, 2, *range(3 + dims, 3 + 2 * dims), 0, *range(3, 3 + dims))
    return cols.reshape(g, cg * math.prod(k_sizes), n * math.prod(out)), out


def pointwise(k_sizes, geo: Geometry) -> bool:
    """A 1x1 kernel, stride 1, no padding: the columns are the input's own values."""
    return all(k == 1 for k in k_sizes) and all(s == 1 for s in geo.strides) and not any(geo.pads)


def columns(x, k_sizes, geo: Geometry):
    """im2col's columns for the filter grad; a pointwise convolution's are x's own values in the matmul layout,
    with no windows to make (15 µs of a small layer's 30)."""
    if pointwise(k_sizes, geo):
        return np.ascontiguousarray(grouped(x, geo.groups)), tuple(x.shape[2:])   # im2col's layout too
    return im2col(x, k_sizes, geo)


def sample_columns(x, k_sizes, geo: Geometry):
    """Each sample's columns, [N, groups, C/g * prod(kernel), prod(out)], and the out sizes: a pointwise
    convolution's are x itself, reshaped."""
    if pointwise(k_sizes, geo):
        return x.reshape(x.shape[0], geo.groups, x.shape[1] // geo.groups, -1), tuple(x.shape[2:])
    dims = len(k_sizes)
    win, out = _grouped_windows(x, k_sizes, geo)
    n, g, cg = win.shape[:3]
    cols = win.transpose(0, 1, 2, *range(3 + dims, 3 + 2 * dims), *range(3, 3 + dims))
    return cols.reshape(n, g, cg * math.prod(k_sizes), math.prod(out)), out


def wide_columns(x, k_sizes, geo: Geometry):
    """Each sample's columns of a unit-stride, undilated 2-D convolution on the padded width: [N, g, C/g * kh * kw,
    oh * Wp], a tap's row of a channel being one contiguous run of the flattened padded image (the run of the last
    taps reads kw - 1 cells into a spare row of zeros). The product then has Wp - ow extra cells a row, which the
    caller drops; each kept cell's column holds im2col's values in im2col's order. Copying runs of oh * Wp cells
    instead of rows of ow made small depthwise layers 1.3-2.5x faster."""
    n, c, (h, w), (kh, kw) = x.shape[0], x.shape[1], x.shape[2:], k_sizes
    (top, bottom, left, right), g = geo.pads, geo.groups
    wp = w + left + right
    flat = padded(x, [(top, bottom + 1), (left, right)]).reshape(n, c, -1)   # the spare row below the padding
    oh, step = h + top + bottom - kh + 1, flat.strides[2]
    runs = as_strided(flat, (n, g, c // g, kh, kw, oh * wp),
                      (flat.strides[0], c // g * flat.strides[1], flat.strides[1], wp * step, step, step),
                      writeable=False)
    return runs.reshape(n, g, c // g * kh * kw, oh * wp), (oh, wp)


def grouped(a, g):
    """[N, C, *S] -> [g, C/g, N * prod(S)], the matmul operand layout of an activation."""
    n, c = a.shape[:2]
    return a.reshape(n, g, c // g, -1).transpose(1, 2, 0, 3).reshape(g, c // g, -1)


def ungrouped(a, n, sizes):
    """[g, C/g, N * prod(S)] -> [N, C, *S]."""
    g, cg = a.shape[:2]
    return a.reshape(g * cg, n, *sizes).transpose(1, 0, *range(2, 2 + len(sizes)))


def col2im(cols, sizes, geo: Geometry, xp=None):
    """The adjoint of the windows: cols [C, *kernel, N, *out] summed back into [N, C, *sizes] (into the
    zeroed padded buffer ``xp`` when given)."""
    dims = len(sizes)
    return sum_taps(cols.transpose(*range(1, dims + 1), dims + 1, 0, *range(dims + 2, 2 * dims + 2)), sizes, geo, xp)


def sum_taps(by_tap, sizes, geo: Geometry, xp=None):
    """col2im of columns laid out by kernel position, [*kernel, N, C, *out]."""
    dims = len(sizes)
    k_sizes, (n, channels), out = by_tap.shape[:dims], by_tap.shape[dims:dims + 2], by_tap.shape[dims + 2:]
    if xp is None:
        xp = np.zeros((n, channels, *padded_sizes(sizes, geo)), dtype=by_tap.dtype)
    add_taps(by_tap.__getitem__, out, k_sizes, geo, xp)
    return inner(xp, sizes, geo)


def padded_sizes(sizes, geo: Geometry) -> list[int]:
    return [size + geo.pads[2 * i] + geo.pads[2 * i + 1] for i, size in enumerate(sizes)]


def inner(xp, sizes, geo: Geometry, last: bool = False):
    """The cells of the padded ``xp`` [N, C, *padded] ([*padded, N, C] when ``last``) inside the padding."""
    inside = tuple(slice(geo.pads[2 * i], geo.pads[2 * i] + size) for i, size in enumerate(sizes))
    return xp[inside] if last else xp[(slice(None), slice(None), *inside)]


def add_taps(tap, out, k_sizes, geo: Geometry, xp, last: bool = False) -> None:
    """col2im into the zeroed padded ``xp`` [N, C, *padded] ([*padded, N, C] when ``last``) of the columns
    ``tap(kernel position)`` shaped like it, each added where its windows read. With strides, the taps of one phase
    (start mod stride) are added into that phase's own grid, where their windows are unit-stride: numpy's strided
    adds run 2-3x slower. Each cell still gets its taps in the same order."""
    def at(spatial):
        return spatial if last else (slice(None), slice(None), *spatial)
    strides = geo.strides if all(s >= 1 for s in geo.strides) else [1] * len(out)
    padded, lead = (xp.shape[:len(out)], xp.shape[len(out):]) if last else (xp.shape[2:], xp.shape[:2])
    phases: dict[tuple, np.ndarray] = {}
    for offset in itertools.product(*map(range, k_sizes)):  # one add per kernel position
        starts = [i * d for i, d in zip(offset, geo.dilations)]
        if all(s == 1 for s in strides):
            grid, window = xp, tuple(slice(t, t + (m - 1) * s + 1, s) for t, m, s in zip(starts, out, geo.strides))
        else:
            phase = tuple(t % s for t, s in zip(starts, strides))
            grid = phases.get(phase)
            if grid is None:
                sizes = [-(-(p - f) // s) for p, f, s in zip(padded, phase, strides)]
                grid = phases[phase] = np.zeros((*sizes, *lead) if last else (*lead, *sizes), dtype=xp.dtype)
            window = tuple(slice(t // s, t // s + m) for t, m, s in zip(starts, out, strides))
        view = grid[at(window)]
        np.add(view, tap(offset), out=view)
    for phase, grid in phases.items():
        xp[at(tuple(slice(f, None, s) for f, s in zip(phase, strides)))] = grid   # xp is zeros
