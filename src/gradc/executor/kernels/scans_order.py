"""Which of several equal elements Paddle's CPU kernels name: mode sorts a row with std::sort, median and
nanmedian find its middle with std::nth_element (then std::sort the part before it) or, for a small k,
std::partial_sort. None of them is stable, so the index of a tied element follows from the exact steps of
GNU libstdc++'s introsort, introselect and heap select, replayed here on one row of (value, index) pairs.
The kernels call this only for rows where a tie makes the choice matter (a pure-Python walk of the row)."""

from __future__ import annotations

from math import isnan

THRESHOLD = 16   # libstdc++'s _S_threshold: introsort leaves runs this short to a final insertion sort


def _less(a, b) -> bool:
    """Paddle's comparator: ascending, NaN after every number (two NaNs are equivalent)."""
    return (not isnan(a[0]) and isnan(b[0])) or a[0] < b[0]


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _linear_insert(v: list, i: int) -> None:
    """Move v[i] left past every element greater than it (something no greater stands before)."""
    item = v[i]
    while _less(item, v[i - 1]):
        v[i] = v[i - 1]
        i -= 1
    v[i] = item


def _insertion_sort(v: list, first: int, last: int) -> None:
    for i in range(first + 1, last):
        if _less(v[i], v[first]):
            v[first + 1:i + 1], v[first] = v[first:i], v[i]
        else:
            _linear_insert(v, i)


def _median_to_first(v: list, result: int, a: int, b: int, c: int) -> None:
    if _less(v[a], v[b]):
        pick = b if _less(v[b], v[c]) else c if _less(v[a], v[c]) else a
    else:
        pick = a if _less(v[a], v[c]) else c if _less(v[b], v[c]) else b
    v[result], v[pick] = v[pick], v[result]


def _partition_pivot(v: list, first: int, last: int) -> int:
    """Hoare partition of [first + 1, last) around the median of three moved to first; the cut."""
    _median_to_first(v, first, first + 1, first + (last - first) // 2, last - 1)
    pivot, lo, hi = v[first], first + 1, last
    while True:
        while _less(v[lo], pivot):
            lo += 1
        hi -= 1
        while _less(pivot, v[hi]):
            hi -= 1
        if lo >= hi:
            return lo
        v[lo], v[hi] = v[hi], v[lo]
        lo += 1


def _adjust_heap(v: list, first: int, hole: int, length: int, item) -> None:
    """Sift ``item`` down from ``hole`` of the max-heap v[first:first + length], then up."""
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _less(v[first + child], v[first + child - 1]):
            child -= 1
        v[first + hole] = v[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        v[first + hole] = v[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and _less(v[first + parent], item):
        v[first + hole] = v[first + parent]
        hole, parent = parent, (parent - 1) // 2
    v[first + hole] = item


def _pop_heap(v: list, first: int, last: int, result: int) -> None:
    item, v[result] = v[result], v[first]
    _adjust_heap(v, first, 0, last - first, item)


def _heap_select(v: list, first: int, middle: int, last: int) -> None:
    """The smallest middle - first elements into a max-heap on [first, middle)."""
    length = middle - first
    for parent in range((length - 2) // 2, -1, -1) if length >= 2 else ():
        _adjust_heap(v, first, parent, length, v[first + parent])
    for i in range(middle, last):
        if _less(v[i], v[first]):
            _pop_heap(v, first, middle, i)


def _sort_heap(v: list, first: int, last: int) -> None:
    while last - first > 1:
        last -= 1
        _pop_heap(v, first, last, last)


def partial_sort(v: list, first: int, middle: int, last: int) -> None:
    _heap_select(v, first, middle, last)
    _sort_heap(v, first, middle)


def _introsort(v: list, first: int, last: int, depth: int) -> None:
    while last - first > THRESHOLD:
        if depth == 0:
            partial_sort(v, first, last, last)
            return
        depth -= 1
        cut = _partition_pivot(v, first, last)
        _introsort(v, cut, last, depth)
        last = cut


def sort(v: list, first: int, last: int) -> None:
    """std::sort of v[first:last]."""
    if last - first < 2:
        return
    _introsort(v, first, last, 2 * _log2(last - first))
    if last - first > THRESHOLD:
        _insertion_sort(v, first, first + THRESHOLD)
        for i in range(first + THRESHOLD, last):
            _linear_insert(v, i)
    else:
        _insertion_sort(v, first, last)


def nth_element(v: list, nth: int, first: int = 0, last: int | None = None) -> None:
    """std::nth_element: v[nth] is the element a sort would put there, none after it is less."""
    last = len(v) if last is None else last
    if first == last or nth == last:
        return
    depth = 2 * _log2(last - first)
    while last - first > 3:
        if depth == 0:
            _heap_select(v, first, nth + 1, last)
            v[first], v[nth] = v[nth], v[first]
            return
        depth -= 1
        cut = _partition_pivot(v, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(v, first, last)


def top_k_ascending(values, k: int, ordered: bool = True) -> list[int]:
    """The indices Paddle's CPU top_k gives for the k smallest of one row: partial_sort where k is small, else
    nth_element, then (``ordered``: the sorted attribute) std::sort of all but the k-th."""
    v = [(value, i) for i, value in enumerate(values)]
    if k * 64 < len(v):
        partial_sort(v, 0, k, len(v))
    else:
        nth_element(v, k - 1)
        if ordered:
            sort(v, 0, k - 1)
    return [i for _, i in v[:k]]


def top_k_largest(values: list[float], k: int, ordered: bool = True) -> list[int]:
    """The same for the k largest, whose comparator puts NaN first: each value replaced by its rank among the
    row's distinct values, largest first (NaN before them all), which the ascending walk compares alike."""
    numbers = sorted({value for value in values if not isnan(value)}, reverse=True)
    rank = {value: place for place, value in enumerate(numbers)}
    return top_k_ascending([-1 if isnan(value) else rank[value] for value in values], k, ordered)


def sorted_indices(values) -> list[int]:
    """The order std::sort gives one row with Paddle's comparator."""
    v = [(value, i) for i, value in enumerate(values)]
    sort(v, 0, len(v))
    return [i for _, i in v]
