"""Cases for the unary math of the tensor API (gradc.ops.unary_math).

Inputs stay inside each function's domain and away from its poles (asin's +-1, tan's pi/2) and the jumps of
the rounding ops, where the central difference would straddle a step; logit's eps cases put values on both
sides of the clip, away from its bounds.
"""

import numpy as np

from . import Case, rng

r = rng(11)


def randn(*shape, scale=1.0):
    return scale * r.standard_normal(shape)


def uniform(low, high, *shape):
    return r.uniform(low, high, shape)


def between_steps(*shape, step=1.0, shift=0.0):
    """Values whose distance from every step point (shift + n * step) is at least a fifth of a step."""
    whole = r.integers(-3, 3, shape)
    return (whole + r.uniform(0.2, 0.8, shape)) * step + shift


def clip_sides(eps, *shape):
    """logit inputs: a third inside [eps, 1 - eps], the rest below or above it, none within 0.05 of a bound."""
    inside = r.uniform(eps + 0.05, 1 - eps - 0.05, shape)
    below = r.uniform(0.01, eps - 0.05, shape)
    above = r.uniform(1 - eps + 0.05, 0.99, shape)
    pick = r.integers(0, 3, shape)
    return np.choose(pick, [inside, below, above])


CASES = [
    Case("floor", {"X": between_steps(3, 4)}),
    Case("ceil", {"X": between_steps(2, 3, 2)}),
    Case("trunc", {"X": between_steps(3, 4)}),
    Case("round", {"X": between_steps(3, 4, shift=0.5)}),                 # steps at the halves
    Case("round", {"X": between_steps(3, 4, step=0.1, shift=0.05)}, {"decimals": 1}),
    Case("round", {"X": between_steps(3, 4, step=10.0, shift=5.0)}, {"decimals": -1}),
    Case("reciprocal", {"X": np.where(r.random((3, 4)) < 0.5, -1, 1) * uniform(0.5, 2, 3, 4)}),
    Case("expm1", {"X": randn(3, 4, scale=2)}),
    Case("log2", {"X": uniform(0.3, 4, 3, 4)}),
    Case("log10", {"X": uniform(0.3, 4, 2, 3, 2)}),
    Case("log1p", {"X": uniform(-0.6, 3, 3, 4)}),
    Case("tan", {"X": uniform(-1.2, 1.2, 3, 4)}),
    Case("asin", {"X": uniform(-0.9, 0.9, 3, 4)}),
    Case("acos", {"X": uniform(-0.9, 0.9, 3, 4)}),
    Case("atan", {"X": randn(3, 4, scale=3)}),
    Case("sinh", {"X": randn(3, 4, scale=2)}),
    Case("cosh", {"X": randn(3, 4, scale=2)}),
    Case("asinh", {"X": randn(3, 4, scale=3)}),
    Case("acosh", {"X": uniform(1.2, 4, 3, 4)}),
    Case("atanh", {"X": uniform(-0.9, 0.9, 3, 4)}),
    Case("erf", {"X": randn(3, 4, scale=1.5)}),
    Case("logit", {"X": uniform(0.05, 0.95, 3, 4)}),
    Case("logit", {"X": uniform(0.05, 0.95, 3, 4)}, {"eps": 0.0}),
    Case("logit", {"X": clip_sides(0.2, 4, 5)}, {"eps": 0.2}),
    Case("stanh", {"X": randn(3, 4, scale=2)}),
    Case("stanh", {"X": randn(2, 3, 2, scale=2)}, {"scale_a": 0.6, "scale_b": 1.5}),
    Case("stanh", {"X": randn(3, 4)}, {"scale_a": -2.0, "scale_b": 0.5}),
]
