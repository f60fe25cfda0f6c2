"""Second-derivative cases (as in second_order.py) for the grad ops of the unary math ops: inputs inside each
domain and away from the poles and steps; logit's eps case has values on both sides of its clip."""

from __future__ import annotations

from . import rng
from .second_order import randn, second_order
from .unary_math import between_steps, clip_sides

r = rng(53)


def uniform(low, high, *shape):
    return r.uniform(low, high, shape)


CASES = [
    second_order("floor", {"X": between_steps(2, 3)}),
    second_order("ceil", {"X": between_steps(2, 3)}),
    second_order("round", {"X": between_steps(2, 3, shift=0.5)}),
    second_order("round", {"X": between_steps(2, 3, step=0.1, shift=0.05)}, {"decimals": 1}),
    second_order("trunc", {"X": between_steps(2, 3)}),
    second_order("reciprocal", {"X": uniform(0.5, 2, 2, 3) * [[1, -1, 1], [-1, 1, 1]]}),
    second_order("expm1", {"X": randn(2, 3)}),
    second_order("log2", {"X": uniform(0.5, 3, 2, 3)}),
    second_order("log10", {"X": uniform(0.5, 3, 2, 3)}),
    second_order("log1p", {"X": uniform(-0.5, 2, 2, 3)}),
    second_order("tan", {"X": uniform(-1.1, 1.1, 2, 3)}),
    second_order("asin", {"X": uniform(-0.8, 0.8, 2, 3)}),
    second_order("acos", {"X": uniform(-0.8, 0.8, 2, 3)}),
    second_order("atan", {"X": randn(2, 3, scale=2)}),
    second_order("sinh", {"X": randn(2, 3)}),
    second_order("cosh", {"X": randn(2, 3)}),
    second_order("asinh", {"X": randn(2, 3, scale=2)}),
    second_order("acosh", {"X": uniform(1.3, 3, 2, 3)}),
    second_order("atanh", {"X": uniform(-0.8, 0.8, 2, 3)}),
    second_order("erf", {"X": randn(2, 3)}),
    second_order("logit", {"X": uniform(0.1, 0.9, 2, 3)}),
    second_order("logit", {"X": clip_sides(0.2, 3, 4)}, {"eps": 0.2}),
    second_order("stanh", {"X": randn(2, 3)}),
    second_order("stanh", {"X": randn(2, 3)}, {"scale_a": -1.5, "scale_b": 0.5}),
]
