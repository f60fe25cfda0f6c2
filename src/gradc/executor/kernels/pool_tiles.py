"""Max pooling whose windows tile the input (stride = window, no padding, sizes divisible: LeNet's and VGG's
2x2 pools), on strided views of each window cell instead of gathered window copies: one np.maximum per cell
for the forward (5x faster than the general kernel on LeNet's first pool, and no memory beyond the output)
and a masked copy per cell for the grad. The results are bit for bit the general kernels': the maxima taken
cell by cell in row-major order (so ties of -0.0 and +0.0 resolve alike), the grad of each window to its
first maximum in row-major order (to its first cell when none compares equal, a NaN window), -0.0 grads
stored as +0.0 as the general kernel's scatter onto zeros gives."""

from __future__ import annotations

import itertools

import numpy as np


def tile_sizes(x: np.ndarray, bounds) -> tuple[int, ...] | None:
    """The window size along each spatial axis when the windows ([start, end) per axis) tile x exactly."""
    sizes = []
    for size, (start, end) in zip(x.shape[2:], bounds):
        k = int(end[0] - start[0]) if len(start) else 0
        if k < 1 or len(start) * k != size or np.any(end - start != k) or np.any(start != np.arange(len(start)) * k):
            return None
        sizes.append(k)
    return tuple(sizes)


def _cells(k_sizes: tuple[int, ...]):
    """Each window cell's strided view index, in row-major order: x[cell] is that cell of every window."""
    for cell in itertools.product(*map(range, k_sizes)):
        yield (Ellipsis, *(slice(c, None, k) for c, k in zip(cell, k_sizes)))


def tiled_max(x: np.ndarray, k_sizes: tuple[int, ...]) -> np.ndarray:
    """The windows' maxima, one np.maximum per window cell over strided views, in the general kernel's order."""
    cells = _cells(k_sizes)
    first = next(cells)
    out = x[first].copy()
    for cell in cells:
        np.maximum(out, x[cell], out=out)
    return out


def tiled_max_grad(x: np.ndarray, dout: np.ndarray, k_sizes: tuple[int, ...]) -> np.ndarray:
    best = tiled_max(x, k_sizes)
    grad = dout + dout.dtype.type(0)   # -0.0 becomes +0.0, as the general kernel's scatter onto zeros gives
    dx = np.zeros(x.shape, dtype=dout.dtype)
    taken = np.zeros(best.shape, dtype=bool)
    hit = np.empty(best.shape, dtype=bool)
    cells = list(_cells(k_sizes))
    for cell in cells:   # row-major: the first maximum wins
        np.equal(x[cell], best, out=hit)
        np.greater(hit, taken, out=hit)   # and not yet taken
        np.copyto(dx[cell], grad, where=hit)
        taken |= hit
    np.logical_not(taken, out=taken)   # windows with no maximum (NaN): their first cell
    np.copyto(dx[cells[0]], grad, where=taken)
    return dx
