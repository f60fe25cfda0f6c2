"""Cases for cummax, cummin, logcumsumexp (each axis, flatten, exclusive, reverse), mode, median and nanmedian
(each mode, one axis, several, all; keepdim). Inputs have no ties: a central difference there straddles two
picks (a mode of repeated values does not even move with one of them), so mode's rows are distinct too, where
the mode is the row's smallest value."""

import numpy as np

from programs import Net

from . import Case, rng

r = rng(18)


def distinct(*shape):
    """Values no two of which are within 0.05 of each other."""
    n = int(np.prod(shape))
    return r.permutation(np.linspace(-2, 2, n) + r.uniform(-0.01, 0.01, n)).reshape(shape)


def with_nans(x):
    """x with a NaN in its first row and two in its last (nanmedian skips them)."""
    x = x.copy()
    x[0, 1] = x[-1, 0] = x[-1, 2] = np.nan
    return x


CUM_EXTREMES = [
    Case(op, {"x": distinct(*shape)}, {"axis": axis})
    for op in ("cummax", "cummin") for shape, axis in (((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((6,), 0))
] + [Case("cummax", {"x": distinct(3, 4)}, {"axis": 1, "dtype": 2})]

def _exclusive(shape, attrs):
    """logcumsumexp exclusive in a program whose loss weighs its empty sums (the dtype's lowest value) by 0:
    check_op's random weight would overflow there."""
    out_shape = (int(np.prod(shape)),) if attrs.get("flatten") else shape
    net = Net()
    x, weights = net.data("x", list(shape)), net.data("w", list(out_shape))
    out = net.logcumsumexp(x, **attrs)
    w = r.standard_normal(out_shape)
    np.moveaxis(w, attrs.get("axis", 0), 0)[-1 if attrs.get("reverse") else 0] = 0.0
    loss = net.reduce_sum(net.elementwise_mul(out, weights), reduce_all=True)
    return {"program": net.program, "feed": {"x": 3 * r.standard_normal(shape), "w": w}, "loss": loss, "wrt": ["x"]}


LOGCUMSUMEXP = [
    Case("logcumsumexp", {"X": 3 * r.standard_normal((3, 5))}, {"axis": axis, "reverse": reverse})
    for axis in (1, -2) for reverse in (False, True)
] + [
    Case("logcumsumexp", {}, attrs, program=lambda attrs=attrs: _exclusive((3, 5), attrs))
    for attrs in ({"axis": 1, "exclusive": True}, {"axis": 0, "exclusive": True, "reverse": True},
                  {"flatten": True, "exclusive": True, "reverse": True})
] + [
    Case("logcumsumexp", {"X": r.standard_normal((2, 3, 2))}, {"flatten": True}),
    Case("logcumsumexp", {"X": r.standard_normal((2, 3))}, {"flatten": True, "reverse": True}),
    Case("logcumsumexp", {"X": r.standard_normal(())}, {"axis": 0}),
]

MODE = [
    Case("mode", {"X": distinct(3, 5)}, {}),
    Case("mode", {"X": distinct(4, 3)}, {"axis": 0, "keepdim": True}),
    Case("mode", {"X": distinct(2, 3, 4)}, {"axis": 1}),
]

MEDIANS = [
    Case(op, {slot: distinct(*shape)}, {"axis": axis, "keepdim": keepdim, "mode": mode})
    for op, slot in (("median", "x"), ("nanmedian", "X")) for mode in ("avg", "min")
    for shape, axis, keepdim in (((3, 5), [1], False), ((4, 3), [0], True), ((2, 3, 4), [0, 2], False),
                                 ((2, 3, 4), [], True), ((3, 4), [-1], False), ((5,), [], False))
] + [
    Case("nanmedian", {"X": with_nans(distinct(3, 5))}, {"axis": [1], "keepdim": False, "mode": mode})
    for mode in ("avg", "min")
]

CASES = CUM_EXTREMES + LOGCUMSUMEXP + MODE + MEDIANS
