"""Second-derivative cases (as in second_order.py) for the scans' grad ops: cummax, cummin and mode on distinct
values (a pick a central difference cannot move), median and nanmedian in each mode on distinct values and, checked
in dOut only, on ties (the grad op shares dOut among equal elements); logcumsumexp along each axis, reversed,
exclusive, flattened, on rows of length 1 to 5 and a 0-d X, and on values far apart (its scan never overflows)."""

from __future__ import annotations

import numpy as np

from . import Case, rng
from .scans import with_nans
from .second_order import distinct, randn, second_order, ties

r = rng(59)

CUM_EXTREMES = [
    second_order(op, {"x": distinct(*shape)}, {"axis": axis})
    for op in ("cummax", "cummin") for shape, axis in (((3, 5), -1), ((3, 4), 0), ((2, 3, 2), 1), ((4,), 0))
] + [
    second_order("cummax", {"x": distinct(2, 3)}, {"axis": 1, "dtype": 2}),
    second_order("cummin", {"x": randn()}, {"axis": 0}),
]

MODE = [
    second_order("mode", {"X": distinct(3, 4)}),
    second_order("mode", {"X": distinct(4, 3)}, {"axis": 0, "keepdim": True}),
    second_order("mode", {"X": distinct(2, 3, 2)}, {"axis": 1}),
    second_order("mode", {"X": distinct(5)}),
    second_order("mode", {"X": randn()}, {"keepdim": True}),
    # repeated modes: checked element by element, as a move of every element would part the tied values
    second_order("mode", {"X": np.array([[0.5, -1.0, 0.5, 2.0], [1.5, 0.25, 0.25, 0.25]])}, by_element=True),
]

MEDIANS = [
    second_order(op, {slot: distinct(*shape)}, {"axis": axis, "keepdim": keepdim, "mode": mode})
    for op, slot in (("median", "x"), ("nanmedian", "X")) for mode in ("avg", "min")
    for shape, axis, keepdim in (((3, 5), [1], False), ((4, 2), [0], True), ((2, 3, 2), [0, 2], False),
                                 ((2, 3, 2), [], True), ((5,), [], False))
] + [
    second_order("nanmedian", {"X": with_nans(distinct(3, 5))}, {"axis": [1], "keepdim": False, "mode": mode})
    for mode in ("avg", "min")
] + [
    second_order(op, {slot: ties(3, 6)}, {"axis": [1], "keepdim": False, "mode": mode}, tied=True)
    for op, slot in (("median", "x"), ("nanmedian", "X")) for mode in ("avg", "min")
] + [  # axes known at run time only: d/d(dOut) sums over them with reduce_sum reading the same vars
    second_order("median", {"x": distinct(2, 3, 2), "AxisTensor": np.array([0, -1], np.int64)},
                 {"keepdim": False, "mode": "avg"}, wrt=["x"]),
    second_order("median", {"x": distinct(3, 4), "AxisTensorList": [np.array([1], np.int64)]},
                 {"keepdim": True, "mode": "min"}, wrt=["x"]),
    second_order("median", {"x": distinct(2, 3), "AxisTensor": np.zeros(0, np.int64)}, {"keepdim": True, "mode": "avg"},
                 wrt=["x"]),
]



def logcumsumexp(x: np.ndarray, unknown: list | None | bool = False, **attrs) -> Case:
    """The second-order case of logcumsumexp; exclusive, with the weights of its empty sums (the dtype's lowest
    value) in the first loss 0: a random one would overflow it (its grads do not see them either way). ``unknown``:
    X's dims declared -1 (None: its rank unknown too)."""
    case = second_order("logcumsumexp", {"X": x}, attrs, unknown=None if unknown is False else {"X": unknown})
    if attrs.get("exclusive"):
        build = case.program

        def program() -> dict:
            built = build()
            weights = built["feed"]["w1_Out0.out"]
            axis = 0 if attrs.get("flatten") else attrs.get("axis", -1)
            np.moveaxis(weights, axis, 0)[-1 if attrs.get("reverse") else 0] = 0.0
            return built

        case.program = program
    return case


LOGCUMSUMEXP = [
    logcumsumexp(randn(3, 5, scale=2), axis=axis, reverse=reverse, exclusive=exclusive)
    for axis in (1, -2) for reverse in (False, True) for exclusive in (False, True)
] + [
    logcumsumexp(randn(2, 3, 2), flatten=True),
    logcumsumexp(randn(2, 3), flatten=True, exclusive=True, reverse=True),
    logcumsumexp(randn(2, 4, 3), axis=1, exclusive=True),
    logcumsumexp(randn(3, 1), axis=1, exclusive=True),
    logcumsumexp(randn(2, 2), axis=0, reverse=True),
    logcumsumexp(randn(), axis=0),
    logcumsumexp(np.array([[-300.0, 0.5, 400.0, -2.0], [700.0, 699.0, -700.0, 705.0]]), axis=1),
] + [  # along a dim of unknown size: a cumsum, shifted halfway between the scan's ends
    logcumsumexp(randn(3, 5, scale=2), [1], axis=axis, reverse=reverse, exclusive=exclusive)
    for axis in (1, -1) for reverse in (False, True) for exclusive in (False, True)
] + [
    logcumsumexp(randn(2, 3, 2), None, flatten=True, exclusive=True),
    logcumsumexp(randn(3, 4), None, axis=1, exclusive=True),   # of unknown rank: shifted by roll
    logcumsumexp(randn(2, 3, 2), None, axis=-2, exclusive=True, reverse=True),
    logcumsumexp(randn(4, 3), None, axis=0, reverse=True),
    logcumsumexp(randn(2, 1), [0, 1], axis=1, exclusive=True),
    logcumsumexp(np.array([[-300.0, 0.5, 400.0, -2.0], [700.0, 699.0, -700.0, 705.0]]), [1], axis=1),
]

CASES = CUM_EXTREMES + MODE + MEDIANS + LOGCUMSUMEXP
