"""Second-derivative cases (as in second_order.py) for cumprod (each dim, exclusive and reverse, zeros in X:
one, two in a row, a column of them; a 0-d X), index_put (accumulate or not; int indices, broadcast together or
fewer than x's rank, repeated; a bool mask) and broadcast_tensors (several input shapes)."""

from __future__ import annotations

import numpy as np

from . import rng
from .broadcast_put import with_zeros
from .second_order import second_order

r = rng(53)


def randn(*shape):
    return r.standard_normal(shape)


CUMPROD = [
    second_order("cumprod", {"X": with_zeros(randn(3, 5))}, {"dim": dim, "exclusive": exclusive, "reverse": reverse})
    for dim in (1, -1) for exclusive in (False, True) for reverse in (False, True)
] + [
    second_order("cumprod", {"X": with_zeros(randn(3, 4, 2))}, {"dim": 0, "reverse": True}),
    second_order("cumprod", {"X": with_zeros(randn(2, 4, 3))}, {"dim": 1, "exclusive": True}),
    second_order("cumprod", {"X": randn(2, 6, 3) * (np.arange(3) > 0)}, {"dim": -2}),   # a column of zeros
    second_order("cumprod", {"X": randn(3, 1)}, {"dim": 1, "exclusive": True}),
    second_order("cumprod", {"X": randn()}, {"dim": 0}),
    second_order("cumprod", {"X": randn()}, {"dim": -1, "exclusive": True}),
]

PICK_ROWS = np.array([2, 0], np.int64)
INDEX_PUT = [
    second_order("index_put", {"x": randn(3, 4), "indices": [PICK_ROWS], "value": randn(2, 4)},
                 {"accumulate": accumulate})
    for accumulate in (False, True)
] + [
    second_order("index_put", {"x": randn(3, 4), "indices": [np.array([[0], [2]]), np.array([1, 3, 0], np.int32)],
                               "value": randn(3)}, {"accumulate": accumulate})
    for accumulate in (False, True)
] + [
    second_order("index_put", {"x": randn(3, 4), "indices": [np.array([0, 2, 0]), np.array([1, 3, 1])],
                               "value": randn(1)}, {"accumulate": accumulate})   # a repeated entry
    for accumulate in (False, True)
] + [
    second_order("index_put", {"x": randn(3, 4, 2), "indices": [randn(3, 4) > 0], "value": randn(2)},
                 {"accumulate": False}),
    second_order("index_put", {"x": randn(3, 4), "indices": [randn(3, 4) > 0], "value": randn(1)},
                 {"accumulate": True}),
]

BROADCAST_TENSORS = [
    second_order("broadcast_tensors", {"X": [randn(2, 1, 3), randn(4, 1), randn(3)]}, counts={"Out": 3}),
    second_order("broadcast_tensors", {"X": [randn(2, 3), randn(2, 3)]}, counts={"Out": 2}),
    second_order("broadcast_tensors", {"X": [randn(3, 1), randn(1, 4), randn(3, 4), randn()]}, counts={"Out": 4}),
]

CASES = CUMPROD + INDEX_PUT + BROADCAST_TENSORS
