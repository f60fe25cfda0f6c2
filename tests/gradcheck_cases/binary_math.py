"""Cases for gradc.ops.binary_math. Inputs keep a margin from the kinks: no fmax/fmin ties, no x near 0 for
copysign and heaviside, atan2 away from the origin."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(11)


def randn(*shape):
    return r.standard_normal(shape)


def away_from_zero(*shape):
    return r.choice([-1.0, 1.0], shape) * r.uniform(0.3, 2.0, shape)


def apart(*shapes):
    """Arrays no two of whose values are within 0.05 of each other (no fmax/fmin ties across them)."""
    sizes = [int(np.prod(s)) for s in shapes]
    values = r.permutation(np.linspace(-2, 2, sum(sizes)))
    return [part.reshape(s) for part, s in zip(np.split(values, np.cumsum(sizes)[:-1]), shapes)]


FX, FY = apart((3, 4), (3, 4))
BX, BY = apart((2, 3, 4), (3, 1))
MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])

CASES = [
    Case("atan2", {"X1": randn(3, 4), "X2": away_from_zero(3, 4)}),
    Case("atan2", {"X1": away_from_zero(2, 3, 4), "X2": randn(4)}),
    Case("elementwise_fmax", {"X": FX, "Y": FY}),
    Case("elementwise_fmax", {"X": BX, "Y": BY}),
    Case("elementwise_fmin", {"X": FX, "Y": FY}),
    Case("elementwise_fmin", {"X": BY, "Y": BX}),
    # heaviside is flat in X away from 0 (where X jumps); Y counts only where x == 0
    Case("elementwise_heaviside", {"X": away_from_zero(2, 3, 4), "Y": randn(4)}),
    Case("elementwise_heaviside", {"X": np.where(MASK, 0.0, away_from_zero(3, 4)), "Y": randn(3, 4)}, wrt=["Y0"]),
    Case("elementwise_heaviside", {"X": np.where(MASK[0], 0.0, away_from_zero(2, 3, 4)), "Y": randn(4)},
         wrt=["Y0"]),
    Case("copysign", {"x": away_from_zero(3, 4), "y": away_from_zero(3, 4)}),
    Case("copysign", {"x": away_from_zero(2, 3, 4), "y": away_from_zero(3, 1)}),
    Case("lerp", {"X": randn(3, 4), "Y": randn(3, 4), "Weight": r.uniform(0, 1, (3, 4))}),
    Case("lerp", {"X": randn(2, 3, 4), "Y": randn(4), "Weight": r.uniform(0, 1, (3, 1))}),
    Case("lerp", {"X": randn(4), "Y": randn(3, 1), "Weight": r.uniform(0, 1, (2, 1, 1))}),
    Case("masked_fill", {"x": randn(3, 4), "mask": MASK, "value": np.array(0.5)}),
    Case("masked_fill", {"x": randn(1, 4), "mask": MASK, "value": randn(3, 1)}),
    Case("conj", {"X": randn(3, 4)}),
    Case("fill_diagonal_tensor", {"X": randn(3, 4), "Y": randn(3)}),
    Case("fill_diagonal_tensor", {"X": randn(3, 3), "Y": randn(1, 3)}),   # as paddle.diagonal_scatter passes it
    Case("fill_diagonal_tensor", {"X": randn(3, 4), "Y": randn(3)}, {"offset": 1}),
    Case("fill_diagonal_tensor", {"X": randn(3, 4), "Y": randn(2)}, {"offset": -1}),
    Case("fill_diagonal_tensor", {"X": randn(2, 3, 4), "Y": randn(4, 2)}, {"dim1": 0, "dim2": 1}),
    Case("fill_diagonal_tensor", {"X": randn(2, 3, 4), "Y": randn(3, 1)}, {"dim1": -1, "dim2": 0, "offset": 1}),
    Case("fill_diagonal_tensor", {"X": randn(4, 2, 3), "Y": randn(2, 2)}, {"dim1": 2, "dim2": 0, "offset": -1}),
    # second derivatives: the grad ops' makers
    second_order("atan2", {"X1": randn(2, 3), "X2": away_from_zero(3)}),
    second_order("elementwise_fmax", {"X": FX, "Y": FY}),
    second_order("elementwise_fmin", {"X": BX, "Y": BY}),
    second_order("elementwise_heaviside", {"X": np.where(MASK, 0.0, away_from_zero(3, 4)), "Y": randn(4)},
                 wrt=["Y"]),
    second_order("copysign", {"x": away_from_zero(2, 3), "y": away_from_zero(3)}),
    second_order("lerp", {"X": randn(2, 3), "Y": randn(3), "Weight": r.uniform(0, 1, (2, 1))}, grad_type="lerp_grad"),
    second_order("masked_fill", {"x": randn(1, 4), "mask": MASK, "value": randn(3, 1)}),
    second_order("fill_diagonal_tensor", {"X": randn(2, 3, 4), "Y": randn(3, 2)}, {"dim1": 0, "dim2": -1, "offset": 1},
                 grad_type="fill_diagonal_tensor_grad"),
]
