"""Cases for gradc.ops.index_elementwise (float64: the byte strides and offsets count 8-byte elements), first and
second order: get of x[:, [2, 0]], of x[1, [0, -1], [3, 1]] (two indices, a negative one, a slice offset) and of
x[[1, 1, 0]] (a row read twice: its grad adds both); put of x[:, [2, 0]] = 5; put_with_tensor of x[:, [2, 0]] = v
(v of the view's shape, and a row broadcast to it) and of x[1, [0, -1], [3, 1]] = v."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(131)
COLUMNS = {"input_dims": [2, 2, 4], "input_strides": [12, 0, 1], "slice_offset": 0}
PAIRS = {"input_dims": [2], "input_strides": [0], "slice_offset": 96}
ROWS, LAST, COLS = np.array([[2], [0]]), np.array([0, -1]), np.array([3, 1])

FORWARD = [
    ("index_elementwise_get", {"x": r.standard_normal((2, 3, 4)), "index": [ROWS]},
     {**COLUMNS, "index_dims": [3, -1, 2, 1], "index_stride": [32]}),
    ("index_elementwise_get", {"x": r.standard_normal((2, 3, 4)), "index": [LAST, COLS]},
     {**PAIRS, "index_dims": [3, 4, -1, 2], "index_stride": [32, 8]}),
    ("index_elementwise_get", {"x": r.standard_normal((2, 3, 4)), "index": [np.array([1, 1, 0])]},
     {"input_dims": [3, 3, 4], "input_strides": [0, 4, 1], "index_dims": [2, -1, 3, 1, 1], "index_stride": [96]}),
    ("index_elementwise_put", {"x": r.standard_normal((2, 3, 4)), "index": [ROWS]},
     {**COLUMNS, "index_dims": [3, -1, 2, 1], "index_strides": [32], "value": 5.0}),
    ("index_elementwise_put_with_tensor",
     {"x": r.standard_normal((2, 3, 4)), "index": [ROWS], "value": r.standard_normal((2, 2, 4))},
     {**COLUMNS, "index_dims": [3, -1, 2, 1], "index_strides": [32]}),
    ("index_elementwise_put_with_tensor",
     {"x": r.standard_normal((2, 3, 4)), "index": [ROWS], "value": r.standard_normal(4)},
     {**COLUMNS, "index_dims": [3, -1, 2, 1], "index_strides": [32]}),
    ("index_elementwise_put_with_tensor",
     {"x": r.standard_normal((2, 3, 4)), "index": [LAST, COLS], "value": r.standard_normal(2)},
     {**PAIRS, "index_dims": [3, 4, -1, 2], "index_strides": [32, 8]}),
]
CASES = [Case(op, inputs, attrs) for op, inputs, attrs in FORWARD]
CASES += [second_order(op, inputs, attrs) for op, inputs, attrs in FORWARD]
