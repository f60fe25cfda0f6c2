"""Cases for the v1 shape ops of older Paddle programs (gradc.ops.legacy_shape) and, as in second_order.py,
for their grad ops."""

from __future__ import annotations

import numpy as np

from . import Case
from .second_order import distinct, randn, second_order

XSHAPE = {"Out": 1, "XShape": 1}
TOP = {"Out": 1, "Indices": 1}


def i32(*values):
    return np.array(values, dtype=np.int32)


CASES = [
    Case("expand", {"X": randn(2, 1, 3)}, {"expand_times": [2, 3, 1]}),
    Case("expand", {"X": randn(3)}, {"expand_times": [2, 2]}),
    Case("expand", {"X": randn(2, 3), "ExpandTimes": i32(1, 2)}),
    Case("expand", {"X": randn(2, 3), "expand_times_tensor": [i32(2), i32(1)]}, {"expand_times": [1, 1]}),
    Case("flatten2", {"X": randn(2, 3, 2)}, {"axis": 1}, outputs=XSHAPE),
    Case("flatten2", {"X": randn(2, 3, 2)}, {"axis": 0}, outputs=XSHAPE),
    Case("flatten2", {"X": randn(2, 3, 2)}, {"axis": 3}, outputs=XSHAPE),
    Case("top_k", {"X": distinct(3, 5)}, {"k": 2}, outputs=TOP),
    Case("top_k", {"X": distinct(2, 2, 4)}, {"k": 4}, outputs=TOP),
    Case("top_k", {"X": distinct(3, 5), "K": i32(3)}, outputs=TOP),
    Case("reshape", {"X": randn(2, 3, 4)}, {"shape": [0, -1]}),
    Case("reshape", {"X": randn(2, 6), "Shape": i32(3, 4)}, {"shape": [1, -1]}),
    Case("reshape", {"X": randn(2, 6), "ShapeTensor": [i32(4), i32(-1)]}),
    Case("transpose", {"X": randn(2, 3, 4)}, {"axis": [2, 0, 1]}),
    Case("transpose", {"X": randn(2, 3, 4)}, {"axis": [-1, 0, 1]}),
    Case("crop", {"X": randn(3, 4)}, {"shape": [2, -1], "offsets": [1, 1]}),
    Case("crop", {"X": randn(3, 4), "Y": randn(2, 2)}, {"offsets": [0, 2]}, wrt=["X"]),
    Case("crop", {"X": randn(3, 4), "Offsets": i32(1, 0)}, {"shape": [2, 3]}),
    second_order("expand", {"X": randn(2, 1)}, {"expand_times": [2, 3]}),
    second_order("expand", {"X": randn(2, 3), "ExpandTimes": i32(2, 1)}),
    second_order("flatten2", {"X": randn(2, 3, 2)}, {"axis": 2}),
    second_order("top_k", {"X": distinct(3, 4)}, {"k": 2}),
    second_order("reshape", {"X": randn(2, 3, 2)}, {"shape": [0, -1]}),
    second_order("reshape", {"X": randn(2, 6), "Shape": i32(4, 3)}),
    second_order("transpose", {"X": randn(2, 3, 2)}, {"axis": [2, 0, 1]}),
    second_order("crop", {"X": randn(3, 4)}, {"shape": [2, 2], "offsets": [1, 1]}),
    second_order("crop", {"X": randn(3, 4), "Y": randn(2, 3), "Offsets": i32(0, 1)}),
]
