"""Max pooling whose windows tile the input (stride = window, no padding, sizes divisible: LeNet's and VGG's
2x2 pools), on reshaped views instead of gathered window copies: the forward needs no memory beyond its
output and the grad little beyond its own (the general kernels gather every window cell, several times the
input's size). The results are bit for bit the general kernels': the same maxima, the grad of each window
to its first maximum in row-major order (to its first cell when none compares equal, a NaN window), added
to zeros as the general kernel's scatter does."""

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


def _blocks(a: np.ndarray, k_sizes: tuple[int, ...]) -> np.ndarray:
    """[N, C, o1*k1, o2*k2, ...] as the view [N, C, o1, k1, o2, k2, ...]."""
    shape = list(a.shape[:2])
    for size, k in zip(a.shape[2:], k_sizes):
        shape += [size // k, k]
    return a.reshape(shape)


def _window_axes(dims: int) -> tuple[int, ...]:
    return tuple(3 + 2 * i for i in range(dims))


def tiled_max(x: np.ndarray, k_sizes: tuple[int, ...]) -> np.ndarray:
    return _blocks(x, k_sizes).max(axis=_window_axes(len(k_sizes)))


def tiled_max_grad(x: np.ndarray, dout: np.ndarray, k_sizes: tuple[int, ...]) -> np.ndarray:
    blocks = _blocks(x, k_sizes)
    best = blocks.max(axis=_window_axes(len(k_sizes)))
    dx = np.zeros(x.shape, dtype=dout.dtype)
    grad_blocks = _blocks(dx, k_sizes)
    taken = np.zeros(best.shape, dtype=bool)
    first = None
    for cell in itertools.product(*map(range, k_sizes)):   # row-major: the first maximum wins
        index = (slice(None), slice(None), *(part for c in cell for part in (slice(None), c)))
        first = index if first is None else first
        hit = (blocks[index] == best) & ~taken
        grad_blocks[index] += np.where(hit, dout, 0)
        taken |= hit
    grad_blocks[first] += np.where(taken, 0, dout)
    return dx
