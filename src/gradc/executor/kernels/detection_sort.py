"""The orders Paddle's detection kernels leave among equal scores. They sort with C++'s unstable std::partial_sort
(matrix_nms), std::sort and std::nth_element (generate_proposals_v2), so which of two equal scores comes first is
whatever GNU libstdc++'s algorithms make of it. gradc.executor.kernels.scans_order replays those algorithms; here
it sorts (-score, position) pairs, its ascending order being Paddle's descending one (a NaN score, which Paddle's
comparator cannot order, goes last). Where no tie decides a place, numpy's sort gives the same order, faster.

Each takes ``keys`` (the scores) and returns positions into it: the first ``count`` by descending key."""

from __future__ import annotations

from math import isnan

import numpy as np

from . import scans_order


def by_score(keys: np.ndarray, count: int) -> np.ndarray | None:
    """The first ``count`` positions by descending key, or None where two equal keys compete for a place among
    them (a tie within them or at the cut; ties below the cut change nothing)."""
    order = np.argsort(-keys, kind="stable")   # NaNs last, as the replay puts them
    contested = keys[order[:count + 1]]
    nans = np.isnan(contested)
    if (contested[1:] == contested[:-1]).any() or (nans[1:] & nans[:-1]).any():
        return None
    return order[:count]


def _replayed(keys: np.ndarray, algorithm, *args) -> np.ndarray:
    pairs = [(-key, position) for position, key in enumerate(keys.tolist())]
    algorithm(pairs, *args)
    return np.array([position for _, position in pairs], np.int64)


def partial_sort(keys: np.ndarray, count: int) -> np.ndarray:
    """std::partial_sort(first, first + count, last, greater) over positions 0..n-1."""
    fast = by_score(keys, count)
    return fast if fast is not None else _replayed(keys, scans_order.partial_sort, 0, count, keys.size)[:count]


def full_sort(keys: np.ndarray) -> np.ndarray:
    """std::sort(first, last, greater) over positions 0..n-1."""
    fast = by_score(keys, keys.size)
    return fast if fast is not None else _replayed(keys, scans_order.sort, 0, keys.size)


class _Unordered(float):
    """A NaN key as a comparator ``a > b`` sees it: neither before nor after any key (and not NaN to the replay, whose
    own rule puts NaN last)."""

    def __lt__(self, other) -> bool:
        return False

    def __gt__(self, other) -> bool:
        return False


_UNORDERED = _Unordered(0.0)


def sort_greater(keys: np.ndarray) -> np.ndarray:
    """std::sort(first, last, a > b) over positions 0..n-1 as C++ runs it where a key is NaN: such a key compares
    false both ways, so libstdc++'s steps leave it (and the numbers around it) where they happen to land."""
    if not np.isnan(keys).any():
        return full_sort(keys)
    pairs = [(_UNORDERED if isnan(key) else -key, position) for position, key in enumerate(keys.tolist())]
    scans_order.sort(pairs, 0, len(pairs))
    return np.array([position for _, position in pairs], np.int64)


def nth_element(keys: np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` positions after std::nth_element(first, first + count, last, greater), in the order
    it leaves them (not sorted)."""
    return _replayed(keys, scans_order.nth_element, count)[:count]
