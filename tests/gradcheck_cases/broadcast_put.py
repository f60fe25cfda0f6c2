"""Cases for cumprod (exclusive, reversed, negative dim, zeros in X: one zero and two in a row),
broadcast_tensors and index_put (accumulate or not; int indices, broadcast together or fewer than x's rank,
and a bool mask)."""

import numpy as np

from . import Case, rng

r = rng(23)


def randn(*shape):
    return r.standard_normal(shape)


def with_zeros(x):
    """x with one zero, and two in a row: where cumprod's gradient must not divide."""
    x[0, 1] = 0.0
    x[1, 2:4] = 0.0
    return x


CUMPROD = [
    Case("cumprod", {"X": with_zeros(randn(3, 5))}, {"dim": dim, "exclusive": exclusive, "reverse": reverse})
    for dim in (1, -1) for exclusive in (False, True) for reverse in (False, True)
] + [
    Case("cumprod", {"X": with_zeros(randn(3, 4, 2))}, {"dim": 0, "reverse": True}),
    Case("cumprod", {"X": randn(2, 4, 3)}, {"dim": -2, "exclusive": True}),
    Case("cumprod", {"X": randn()}, {"dim": 0}),
]

BROADCAST_TENSORS = [
    Case("broadcast_tensors", {"X": [randn(2, 1, 3), randn(4, 1), randn(3)]}, outputs={"Out": 3}),
    Case("broadcast_tensors", {"X": [randn(2, 3), randn(2, 3)]}, outputs={"Out": 2}),
]

PICK_ROWS = np.array([2, 0], np.int64)   # no repeats: with accumulate off, a repeated entry keeps one value
INDEX_PUT = [
    Case("index_put", {"x": randn(3, 4), "indices": [PICK_ROWS], "value": randn(2, 4)}, {"accumulate": accumulate})
    for accumulate in (False, True)
] + [
    Case("index_put", {"x": randn(3, 4), "indices": [np.array([[0], [2]]), np.array([1, 3, 0], np.int32)],
                       "value": randn(3)}, {"accumulate": False}),
    Case("index_put", {"x": randn(3, 4), "indices": [np.array([0, 2, 0]), np.array([1, 3, 1])], "value": randn(1)},
         {"accumulate": True}),   # a repeated entry adds value twice
    Case("index_put", {"x": randn(3, 4, 2), "indices": [randn(3, 4) > 0], "value": randn(2)}, {"accumulate": False}),
    Case("index_put", {"x": randn(3, 4), "indices": [randn(3, 4) > 0], "value": randn(1)}, {"accumulate": True}),
]

CASES = CUMPROD + BROADCAST_TENSORS + INDEX_PUT
