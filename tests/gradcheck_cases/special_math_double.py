"""Second-derivative cases (as in second_order.py) for the grad ops of the special functions: inputs inside erfinv's
domain, away from the gamma family's poles, on both sides of 0 for the Bessel functions (past the kinks of i0e' and
i1e' at 0) and on both sides of |x| = 1, where I2(x) / x in i1's and i1e's second derivatives changes branch."""

from __future__ import annotations

import numpy as np

from . import rng
from .second_order import second_order
from .special_math import between_poles, both_sides

r = rng(19)

# Both branches of I2(x) / x; i0 and i1 only up to |x| = 5, where loss2's size (i0(12) = 2e4) does not yet swamp its
# central differences in rounding, the scaled ones past the split of their kernels' expansions at |x| = 8 too.
SMALL_AND_LARGE = np.array([[-0.3, 0.05, 0.9, -1.2], [1.1, 2.5, -3.5, 5.0]])
SCALED_SMALL_AND_LARGE = np.array([[-0.3, 0.05, 0.9, -1.2], [2.5, -6.0, 9.5, 14.0]])

CASES = [
    second_order("erfinv", {"X": r.uniform(-0.9, 0.9, (2, 3))}),
    second_order("lgamma", {"X": between_poles(2, 3)}, rtol=1e-4),
    second_order("lgamma", {"X": r.uniform(5.0, 30.0, (2, 3))}),
    second_order("digamma", {"X": between_poles(2, 3)}, rtol=1e-4),
    *[second_order("polygamma", {"x": between_poles(2, 3)}, {"n": n}, rtol=1e-4) for n in (0, 1)],
    # polygamma(5) 0.2 from a pole is 1e6, which would swamp loss2's central differences in rounding
    second_order("polygamma", {"x": np.array([[1.7, 2.4, 3.1], [0.6, -0.4, -1.45]])}, {"n": 3}, rtol=1e-4),
    second_order("i0", {"x": both_sides(2, 3, high=5.0)}),
    second_order("i0e", {"x": both_sides(2, 3)}),
    second_order("i1", {"x": both_sides(2, 3, high=5.0)}),
    second_order("i1", {"x": SMALL_AND_LARGE}),
    second_order("i1e", {"x": both_sides(2, 3)}),
    second_order("i1e", {"x": SCALED_SMALL_AND_LARGE}),
    second_order("i0e", {"x": SCALED_SMALL_AND_LARGE}),
]
