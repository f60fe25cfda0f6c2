"""Cases for the products family: dot, cross, kron, mv, addmm, baddbmm, multi_dot, dist (p 0, 1, 2, 3, 0.5,
inf, -inf, broadcast), trace and diagonal (offsets, axes), frobenius_norm (axes, keep_dim, reduce_all) and
einsum (contractions, diagonals, broadcasting, implicit output).

dist keeps |X - Y| away from 0 and its entries apart, so neither the p < 1 cusp nor an inf-norm tie is straddled.
"""

import numpy as np

from . import Case, rng

r = rng(18)


def randn(*shape):
    return r.standard_normal(shape)


def apart(*shape):
    """Values at least 0.1 from 0 and from each other (in absolute value)."""
    n = int(np.prod(shape))
    magnitudes = np.linspace(0.3, 0.3 + 0.15 * n, n)
    return (r.permutation(magnitudes) * r.choice([-1, 1], n)).reshape(shape)


def einsum(equation, *shapes):
    return Case("einsum", {"Operands": [randn(*s) for s in shapes]}, {"equation": equation},
                outputs={"Out": 1, "InnerCache": len(shapes), "XShape": len(shapes)})


DIST_Y = randn(2, 3)
CASES = [
    Case("dot", {"X": randn(5), "Y": randn(5)}),
    Case("dot", {"X": randn(3, 4), "Y": randn(3, 4)}),
    Case("cross", {"X": randn(4, 3), "Y": randn(4, 3)}),
    Case("cross", {"X": randn(3, 2, 3), "Y": randn(3, 2, 3)}, {"dim": -1}),
    Case("kron", {"X": randn(2, 3), "Y": randn(3, 2)}),
    Case("kron", {"X": randn(2, 1, 3), "Y": randn(2, 2)}),
    Case("mv", {"X": randn(3, 4), "Vec": randn(4)}),
    Case("addmm", {"Input": randn(2, 3), "X": randn(2, 4), "Y": randn(4, 3)}, {"Alpha": 2.0, "Beta": 0.5}),
    Case("addmm", {"Input": randn(3), "X": randn(2, 4), "Y": randn(4, 3)}),
    Case("addmm", {"Input": randn(2, 1), "X": randn(2, 4), "Y": randn(4, 3)}, {"Beta": -1.5}),
    Case("baddbmm", {"Input": randn(2, 2, 3), "X": randn(2, 2, 4), "Y": randn(2, 4, 3)}, {"Alpha": 0.5, "Beta": 2.0}),
    Case("baddbmm", {"Input": randn(1, 2, 1), "X": randn(2, 2, 4), "Y": randn(2, 4, 3)}),
    Case("multi_dot", {"X": [randn(2, 3), randn(3, 4), randn(4, 2)]}),
    Case("multi_dot", {"X": [randn(3), randn(3, 4), randn(4, 2), randn(2)]}),
    Case("multi_dot", {"X": [randn(3), randn(3, 2)]}),
    *[Case("dist", {"X": DIST_Y + apart(2, 3), "Y": DIST_Y}, {"p": p})
      for p in (0.0, 1.0, 2.0, 3.0, 0.5, float("inf"), float("-inf"))],
    Case("dist", {"X": randn(2, 3), "Y": randn(3)}, {"p": 2.0}),
    Case("trace", {"Input": randn(3, 3)}),
    Case("trace", {"Input": randn(2, 3, 4)}, {"offset": 1, "axis1": 1, "axis2": 2}),
    Case("trace", {"Input": randn(3, 2, 4)}, {"offset": -1, "axis1": -1, "axis2": 0}),
    Case("diagonal", {"Input": randn(3, 4)}, {"offset": -1}),
    Case("diagonal", {"Input": randn(2, 3, 4)}, {"offset": 2, "axis1": 2, "axis2": 0}),
    Case("frobenius_norm", {"X": randn(3, 4, 2)}, {"dim": [0, 1]}),
    Case("frobenius_norm", {"X": randn(3, 4)}, {"dim": [-1], "keep_dim": True}),
    Case("frobenius_norm", {"X": randn(2, 3)}, {"reduce_all": True}),
    einsum("ij,jk->ik", (2, 4), (4, 3)),
    einsum("bii->b", (2, 3, 3)),
    einsum("iij->j", (3, 3, 2)),
    einsum("ij->ji", (2, 3)),
    einsum("ij,ij->", (2, 3), (2, 3)),
    einsum("bij,bjk", (2, 2, 3), (2, 3, 2)),
    einsum("...ij,...jk->...ik", (2, 2, 3), (3, 4)),
    einsum("ij,ij->ij", (2, 3), (1, 3)),
    einsum("ijk,k->i", (2, 3, 4), (4,)),
]
