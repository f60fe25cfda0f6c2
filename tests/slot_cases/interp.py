"""Optional inputs of the resize ops: SizeTensor, OutSize and Scale override the out_* and scale
attributes. Expected values by construction: with align_corners, a 2 -> 3 resize inserts the midpoint
(linear, bilinear, bicubic and trilinear alike); nearest doubles every cell. The out_* attributes ask for
another shape, so the expected output alone shows the input is read (overrides=False: the walk's
comparison with the run without the input needs equal shapes)."""

import numpy as np

from . import SlotCase

RANK = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5, "nearest": 4}


def _midpoints(x):
    for axis in range(2, x.ndim):
        a, b = np.take(x, [0], axis), np.take(x, [1], axis)
        x = np.concatenate([a, (a + b) / 2, b], axis=axis)
    return x


def _cases(method):
    op, dims = f"{method}_interp_v2", RANK[method] - 2
    x = np.arange(2.0 ** dims).reshape((1, 1) + (2,) * dims) ** 2
    if method == "nearest":
        expected, size, scale = x.repeat(2, 2).repeat(2, 3), [4, 4], 2.0
        attrs = {"interp_method": method, "align_corners": False, "out_h": 3, "out_w": 5}
    else:
        expected, size, scale = _midpoints(x), [3] * dims, 1.5
        attrs = {"interp_method": method, "align_corners": True, "out_d": 5, "out_h": 5, "out_w": 5}
    return [
        SlotCase(op, "SizeTensor", {"X": x, "SizeTensor": [np.array([s], np.int32) for s in size]},
                 {"Out": expected}, attrs, overrides=False),
        SlotCase(op, "OutSize", {"X": x, "OutSize": np.array(size, np.int32)}, {"Out": expected}, attrs,
                 overrides=False),
        SlotCase(op, "Scale", {"X": x, "Scale": np.array([scale], np.float32)}, {"Out": expected}, attrs,
                 overrides=False),
    ]


CASES = [case for method in RANK for case in _cases(method)]
