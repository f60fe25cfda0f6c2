"""Central differences of a scalar function of an array, by element or along directions (gradcheck's numeric side).

The function reads the array it is given each time it is called, so both perturb the array in place and put it back.
"""

from __future__ import annotations

import numpy as np


def _flat(value: np.ndarray) -> np.ndarray:
    if not value.flags.c_contiguous:   # reshape would copy: the perturbations would never reach f
        raise ValueError("central differences perturb value in place: it must be C-contiguous")
    return value.reshape(-1)


def numeric_grad(f, value: np.ndarray, eps: float, indices: np.ndarray | None = None) -> np.ndarray:
    """Central differences of the scalar f(value) with respect to the elements of ``value`` at the flat
    ``indices`` (default: all); the result is flat, one entry per index. A complex element is moved along
    the real and the imaginary axis: its entry is dL/dRe + i dL/dIm (Paddle's gradient of a complex var)."""
    flat = _flat(value)
    indices = np.arange(flat.size) if indices is None else indices
    directions = (1, 1j) if np.iscomplexobj(value) else (1,)
    grad = np.zeros(len(indices), dtype=np.complex128 if len(directions) > 1 else np.float64)
    for k, i in enumerate(indices):
        original = flat[i]
        for direction in directions:
            flat[i] = original + eps * direction
            plus = f()
            flat[i] = original - eps * direction
            minus = f()
            flat[i] = original
            grad[k] += direction * (plus - minus) / (2 * eps)
    return grad


def random_directions(rng: np.random.Generator, value: np.ndarray, count: int) -> np.ndarray:
    """``count`` random unit vectors in the space of ``value`` (flat, one per row; complex for a complex value):
    each moves every element at once, so a wrong gradient anywhere changes the derivative along it."""
    directions = rng.standard_normal((count, value.size))
    if np.iscomplexobj(value):
        directions = directions + 1j * rng.standard_normal((count, value.size))
    return directions / np.linalg.norm(directions, axis=1, keepdims=True)


def directional_derivatives(f, value: np.ndarray, eps: float, directions: np.ndarray) -> np.ndarray:
    """Central differences of the scalar f(value) along each (flat) row of ``directions``: two calls of f a
    direction, whatever the array's size. For a complex value the derivative along u is Re(sum(conj(g) * u)),
    g being Paddle's gradient dL/dRe + i dL/dIm."""
    flat = _flat(value)
    original = flat.copy()
    derivatives = np.zeros(len(directions))
    try:
        for k, direction in enumerate(directions):
            flat[...] = original + eps * direction
            plus = f()
            flat[...] = original - eps * direction
            minus = f()
            derivatives[k] = (plus - minus) / (2 * eps)
    finally:
        flat[...] = original
    return derivatives
