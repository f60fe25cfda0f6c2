"""Second-derivative cases (as in second_order.py) for the products family: the bilinear ones (dot, cross, kron,
mv), the linear ones (trace, diagonal), addmm and baddbmm (a broadcast Input), multi_dot (vectors at the ends),
einsum (one and two operands, a diagonal), dist (p 1, 2, 3, inf; broadcast) and frobenius_norm (dims dropped or
kept). dist keeps |X - Y| away from 0 and its entries apart (no kink, no tie)."""

from __future__ import annotations

from . import rng
from .products import apart
from .second_order import second_order

r = rng(59)


def randn(*shape):
    return r.standard_normal(shape)


DIST_Y = randn(2, 3)
CASES = [
    second_order("dot", {"X": randn(2, 3), "Y": randn(2, 3)}),
    second_order("cross", {"X": randn(2, 3), "Y": randn(2, 3)}),
    second_order("kron", {"X": randn(2, 1, 3), "Y": randn(2, 2)}),
    second_order("mv", {"X": randn(3, 4), "Vec": randn(4)}),
    second_order("trace", {"Input": randn(2, 3, 4)}, {"offset": 1, "axis1": 1, "axis2": 2}),
    second_order("diagonal", {"Input": randn(3, 4)}, {"offset": -1}),
    second_order("addmm", {"Input": randn(3), "X": randn(2, 4), "Y": randn(4, 3)}, {"Alpha": 2.0, "Beta": 0.5}),
    second_order("baddbmm", {"Input": randn(2, 1, 3), "X": randn(2, 2, 4), "Y": randn(2, 4, 3)}, {"Alpha": -1.5}),
    second_order("multi_dot", {"X": [randn(3), randn(3, 4), randn(4, 2)]}),
    second_order("multi_dot", {"X": [randn(2, 3), randn(3, 4), randn(4)]}),
    second_order("einsum", {"Operands": [randn(2, 3), randn(3, 4)]}, {"equation": "ij,jk->ik"},
                 counts={"InnerCache": 2, "XShape": 2}, grad_type="einsum_grad"),
    second_order("einsum", {"Operands": [randn(2, 3, 3)]}, {"equation": "bii->b"},
                 counts={"InnerCache": 1, "XShape": 1}, grad_type="einsum_grad"),
    *[second_order("dist", {"X": DIST_Y + apart(2, 3), "Y": DIST_Y}, {"p": p}) for p in (1.0, 2.0, 3.0, float("inf"))],
    second_order("dist", {"X": randn(2, 3), "Y": randn(3)}, {"p": 2.0}),
    second_order("frobenius_norm", {"X": randn(3, 4, 2)}, {"dim": [0, 2]}),
    second_order("frobenius_norm", {"X": randn(3, 4)}, {"dim": [1], "keep_dim": True}),
    second_order("frobenius_norm", {"X": randn(2, 3)}, {"reduce_all": True}),
]
