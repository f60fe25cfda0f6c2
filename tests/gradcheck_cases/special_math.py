"""Cases for the special functions: erfinv inside (-1, 1), the gamma family on both sides of 0 (away from its
poles), the Bessel functions on both sides of the split of their expansions at |x| = 8."""

import numpy as np

from . import Case, rng

r = rng(18)


def between_poles(*shape):
    """Values on both sides of 0, each at least 0.2 away from the poles 0, -1, -2, ..."""
    x = r.uniform(-3.8, 4.0, shape)
    fraction = x - np.floor(x)
    return np.where(x < 0, np.floor(x) + 0.2 + 0.6 * fraction, x + 0.2)


def both_sides(*shape, low=0.1, high=12.0):
    """|x| in [low, high], either sign."""
    return r.choice([-1.0, 1.0], shape) * r.uniform(low, high, shape)


CASES = [
    Case("erfinv", {"X": r.uniform(-0.95, 0.95, (3, 4))}),
    Case("erfinv", {"X": np.array([-0.999, -0.99, 0.0, 1e-3, 0.6, 0.99])}, rtol=1e-4),   # the steep tails
    Case("lgamma", {"X": between_poles(3, 4)}),
    Case("lgamma", {"X": r.uniform(5.0, 40.0, (2, 3))}),   # Stirling's side
    Case("digamma", {"X": between_poles(3, 4)}),
    Case("digamma", {"X": r.uniform(5.0, 40.0, (2, 3))}),
    *[Case("polygamma", {"x": between_poles(3, 4)}, {"n": n}, rtol=1e-4) for n in (0, 1, 2, 3)],
    Case("polygamma", {"x": np.array([-70.3, -66.6, 0.7, 3.5])}, {"n": 5}, rtol=1e-4),   # far below 0, high order
    Case("i0", {"x": both_sides(3, 4)}),
    Case("i0e", {"x": both_sides(3, 4)}),
    Case("i1", {"x": both_sides(3, 4)}),
    Case("i1", {"x": np.array([-1e-3, 2e-3, 0.5])}),
    Case("i1e", {"x": both_sides(3, 4)}),
    Case("i1e", {"x": np.array([-1e-3, 2e-3, 0.5])}),
]
