"""Paddle's elementwise broadcasting, and its inverse for gradients."""

from __future__ import annotations

import math

import numpy as np


def align(x: np.ndarray, y: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Reshape the lower-rank operand so its dims line up with the other's from ``axis``
    (-1: trailing dims, as numpy does)."""
    if x.ndim == y.ndim or axis == -1:
        return x, y
    if x.ndim > y.ndim:
        return x, y.reshape((1,) * axis + y.shape + (1,) * (x.ndim - axis - y.ndim))
    return x.reshape((1,) * axis + x.shape + (1,) * (y.ndim - axis - x.ndim)), y


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``grad`` down to ``shape``: the adjoint of broadcasting (any alignment of dims)."""
    if grad.shape == tuple(shape):
        return grad
    size = math.prod(shape)
    if grad.ndim > len(shape):
        grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    if grad.shape == tuple(shape):
        return grad
    axes = tuple(i for i, (g, s) in enumerate(zip(grad.shape, shape)) if s == 1 and g != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape) if grad.size == size else grad


def reduce_to(grad: np.ndarray, operand: np.ndarray, aligned: np.ndarray) -> np.ndarray:
    """The grad of an operand that was reshaped to ``aligned`` and broadcast into ``grad``."""
    return unbroadcast(grad, aligned.shape).reshape(operand.shape)


def reusable(temporary, other):
    """``temporary``, an array the caller made, as the ``out`` of a ufunc of it and ``other`` where the result has
    its dtype and shape by numpy's promotion and broadcasting; else None (the ufunc makes a new array)."""
    if type(temporary) is not np.ndarray:
        return None
    if type(other) is np.ndarray and other.dtype == temporary.dtype and other.ndim <= temporary.ndim \
            and all(o == t or o == 1 for o, t in zip(other.shape[::-1], temporary.shape[::-1])):
        return temporary   # a like or per-channel operand, decided without numpy's rules (1.8 µs against 4.6)
    fits = temporary.dtype == np.result_type(temporary, other) and \
        temporary.shape == np.broadcast_shapes(temporary.shape, np.shape(other))
    return temporary if fits else None
