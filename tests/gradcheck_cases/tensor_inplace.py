"""Cases for gradc.ops.tensor_fill and tensor_views: fill_diagonal (with an offset, wrapped, rank 3 with wrap), the
refills and draws whose grads are 0 (a draw of std 0, or over [min, min], is a constant, so the central difference
is their 0), view_shape and as_strided (apart, and overlapping: an element read twice gets both grads),
index_select_strided (a negative index and axis too)."""


from . import Case, rng
from .second_order import second_order

r = rng(57)

FORWARD = [
    ("fill_diagonal", {"X": r.standard_normal((3, 4))}, {"value": 2.0, "offset": 1, "wrap": False}),
    ("fill_diagonal", {"X": r.standard_normal((5, 3))}, {"value": -1.0, "offset": 0, "wrap": True}),
    ("fill_diagonal", {"X": r.standard_normal((3, 3, 3))}, {"value": 0.5, "offset": 0, "wrap": True}),
    ("fill_any", {"X": r.standard_normal((2, 3))}, {"value": 4.0}),
    ("gaussian_inplace", {"x": r.standard_normal((2, 3))}, {"mean": 0.5, "std": 0.0}),
    ("uniform_random_inplace", {"X": r.standard_normal((2, 3))}, {"min": 1.5, "max": 1.5}),
    ("view_shape", {"input": r.standard_normal((3, 4))}, {"dims": [2, -1]}),
    ("as_strided", {"input": r.standard_normal((3, 4))}, {"dims": [2, 3], "stride": [4, 1], "offset": 32}),
    ("as_strided", {"input": r.standard_normal((3, 4))}, {"dims": [3, 3], "stride": [1, 2], "offset": 8}),
    ("index_select_strided", {"x": r.standard_normal((2, 3, 4))}, {"index": 2, "axis": 1}),
    ("index_select_strided", {"x": r.standard_normal((2, 3, 4))}, {"index": -1, "axis": -1}),
]
CASES = [Case(op, inputs, attrs) for op, inputs, attrs in FORWARD]
CASES += [second_order(op, inputs, attrs) for op, inputs, attrs in FORWARD]
