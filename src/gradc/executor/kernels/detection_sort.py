"""The orders Paddle's detection kernels leave among equal scores. They sort with C++'s unstable std::partial_sort
(matrix_nms), std::sort and std::nth_element (generate_proposals_v2), so which of two equal scores comes first is
whatever GNU libstdc++'s algorithms (heap select, introsort, introselect) make of it. Without ties any order by
score is that order, and numpy gives it; with ties these functions replay libstdc++'s steps on the positions.

Each takes ``keys`` (the scores) and returns positions into it: the first ``count`` by descending key.
"""

from __future__ import annotations

import numpy as np

INSERTION_THRESHOLD = 16   # libstdc++'s _S_threshold: introsort leaves runs this short to insertion sort


def has_ties(keys: np.ndarray) -> bool:
    return np.unique(keys).size != keys.size


def partial_sort(keys: np.ndarray, count: int) -> np.ndarray:
    """std::partial_sort(first, first + count, last, greater) over positions 0..n-1."""
    if not has_ties(keys):
        return np.argsort(-keys, kind="stable")[:count]
    order = list(range(keys.size))
    _Heap(keys.tolist(), order).partial_sort(0, count, len(order))
    return np.array(order[:count], dtype=np.int64)


def full_sort(keys: np.ndarray) -> np.ndarray:
    """std::sort(first, last, greater) over positions 0..n-1."""
    if not has_ties(keys):
        return np.argsort(-keys, kind="stable")
    order = list(range(keys.size))
    _Introsort(keys.tolist(), order).sort(0, len(order))
    return np.array(order, dtype=np.int64)


def nth_element(keys: np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` positions after std::nth_element(first, first + count, last, greater), in the order
    it leaves them (not sorted)."""
    order = list(range(keys.size))
    _Introsort(keys.tolist(), order).select(0, count, len(order))
    return np.array(order[:count], dtype=np.int64)


class _Heap:
    """libstdc++'s heap algorithms on ``order`` under "key of a > key of b" (a max-heap of the comparator)."""

    def __init__(self, keys: list, order: list):
        self.keys, self.order = keys, order

    def before(self, a: int, b: int) -> bool:
        return self.keys[a] > self.keys[b]

    def partial_sort(self, first: int, middle: int, last: int) -> None:
        self.heap_select(first, middle, last)
        self.sort_heap(first, middle)

    def heap_select(self, first: int, middle: int, last: int) -> None:
        """__heap_select: the heap of [first, middle) ends holding the smallest by the comparator."""
        self.make_heap(first, middle)
        order = self.order
        for i in range(middle, last):
            if self.before(order[i], order[first]):
                self.pop_heap(first, middle, i)

    def make_heap(self, first: int, last: int) -> None:
        length = last - first
        if length < 2:
            return
        for parent in range((length - 2) // 2, -1, -1):
            self.adjust_heap(first, parent, length, self.order[first + parent])

    def sort_heap(self, first: int, last: int) -> None:
        while last - first > 1:
            last -= 1
            self.pop_heap(first, last, last)

    def pop_heap(self, first: int, last: int, result: int) -> None:
        order = self.order
        value = order[result]
        order[result] = order[first]
        self.adjust_heap(first, 0, last - first, value)

    def adjust_heap(self, first: int, hole: int, length: int, value: int) -> None:
        order, top, child = self.order, hole, hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if self.before(order[first + child], order[first + child - 1]):
                child -= 1
            order[first + hole] = order[first + child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            order[first + hole] = order[first + child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and self.before(order[first + parent], value):
            order[first + hole] = order[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        order[first + hole] = value


class _Introsort(_Heap):
    """std::sort (introsort, then insertion sort) and std::nth_element (introselect) of libstdc++."""

    def sort(self, first: int, last: int) -> None:
        if last - first < 2:
            return
        self.introsort_loop(first, last, 2 * _log2(last - first))
        if last - first > INSERTION_THRESHOLD:
            self.insertion_sort(first, first + INSERTION_THRESHOLD)
            for i in range(first + INSERTION_THRESHOLD, last):
                self.linear_insert(i)
        else:
            self.insertion_sort(first, last)

    def introsort_loop(self, first: int, last: int, depth: int) -> None:
        while last - first > INSERTION_THRESHOLD:
            if depth == 0:
                self.partial_sort(first, last, last)
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            self.introsort_loop(cut, last, depth)
            last = cut

    def select(self, first: int, nth: int, last: int) -> None:
        if first == last or nth == last:
            return
        depth = 2 * _log2(last - first)
        while last - first > 3:
            if depth == 0:
                self.heap_select(first, nth + 1, last)
                self.swap(first, nth)
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            if cut <= nth:
                first = cut
            else:
                last = cut
        self.insertion_sort(first, last)

    def swap(self, a: int, b: int) -> None:
        self.order[a], self.order[b] = self.order[b], self.order[a]

    def partition_pivot(self, first: int, last: int) -> int:
        self.median_to_first(first, first + 1, first + (last - first) // 2, last - 1)
        return self.unguarded_partition(first + 1, last, first)

    def median_to_first(self, result: int, a: int, b: int, c: int) -> None:
        o, before = self.order, self.before
        if before(o[a], o[b]):
            median = b if before(o[b], o[c]) else c if before(o[a], o[c]) else a
        else:
            median = a if before(o[a], o[c]) else c if before(o[b], o[c]) else b
        self.swap(result, median)

    def unguarded_partition(self, first: int, last: int, pivot: int) -> int:
        o, before = self.order, self.before
        while True:
            while before(o[first], o[pivot]):
                first += 1
            last -= 1
            while before(o[pivot], o[last]):
                last -= 1
            if not first < last:
                return first
            self.swap(first, last)
            first += 1

    def insertion_sort(self, first: int, last: int) -> None:
        o = self.order
        for i in range(first + 1, last):
            if self.before(o[i], o[first]):
                value = o[i]
                o[first + 1:i + 1] = o[first:i]
                o[first] = value
            else:
                self.linear_insert(i)

    def linear_insert(self, last: int) -> None:
        o = self.order
        value, prev = o[last], last - 1
        while self.before(value, o[prev]):
            o[last] = o[prev]
            last, prev = prev, prev - 1
        o[last] = value


def _log2(n: int) -> int:
    return n.bit_length() - 1
