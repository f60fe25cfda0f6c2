"""Second and third derivatives of the special functions (gradc.ops.special_math_double): a third backward over
second-order cases, with inputs where loss3's size leaves its central differences their digits (near the gamma
family's poles polygamma(n + 3) is too large for that), and i1's and i1e's second derivatives at and near 0, where
their makers leave the recurrence of I2(x) / x for its series."""

from __future__ import annotations

import zlib
from math import factorial

import numpy as np
import pytest

import gradc
from float64_nets import check_third_derivatives
from gradc.executor.kernels import SHAPE_ONLY
from gradc.layers import ProgramBuilder
from gradcheck_cases.second_order import second_order

AWAY_FROM_POLES = np.array([[1.7, 2.4, 3.1], [0.6, -0.5, -1.5]])
BESSEL = np.array([[-0.3, 0.05, 0.9, -1.2], [1.1, 2.5, -3.5, 5.0]])
THIRD_ORDER = [
    second_order("erfinv", {"X": np.array([[-0.8, -0.2, 0.1], [0.4, 0.7, 0.85]])}),
    second_order("lgamma", {"X": AWAY_FROM_POLES}),
    second_order("digamma", {"X": AWAY_FROM_POLES}),
    second_order("polygamma", {"x": AWAY_FROM_POLES}, {"n": 3}),
    second_order("i0", {"x": BESSEL}),
    second_order("i0e", {"x": BESSEL * 2}),
    second_order("i1", {"x": BESSEL}),
    second_order("i1e", {"x": BESSEL * 2}),
]


@pytest.mark.parametrize("case", THIRD_ORDER, ids=[case.id for case in THIRD_ORDER])
def test_third_derivatives_through(case):
    # weights of the case's own (not the module's shared generator, whose state depends on which tests a worker ran
    # before: polygamma's loss3 sums terms of 1e5 near its poles, and 1 draw in 30 leaves 3.1's difference 2e-3 off)
    check_third_derivatives(case, np.random.default_rng(zlib.crc32(case.id.encode())))


def second_derivative(op: str, x: np.ndarray) -> np.ndarray:
    """d^2 op / dx^2 at x, by two backward passes."""
    net = ProgramBuilder()
    xv = net.data("x", list(x.shape), "float64", stop_gradient=False)
    out = net.op(op, {"x": xv})[0]
    slope = gradc.gradients(net.program, net.op("reduce_sum", {"X": out}, {"reduce_all": True, "dim": []})[0],
                            [xv])[0]
    curvature = gradc.gradients(net.program, net.op("reduce_sum", {"X": slope}, {"reduce_all": True, "dim": []})[0],
                                [xv])[0]
    return gradc.Executor().run(net.program, {"x": x}, [curvature], gradc.Scope())[0]


def i1_series(x: float, derivative: int) -> float:
    """The ``derivative``-th derivative of i1 (0, 1 or 2) at x from its series sum_k (x/2)^(2k+1) / (k! (k+1)!)."""
    total = 0.0
    for k in range(30):
        power = 2 * k + 1
        if power < derivative:
            continue
        falling = 1.0
        for step in range(derivative):
            falling *= power - step
        total += falling * x ** (power - derivative) / (2.0 ** power * factorial(k) * factorial(k + 1))
    return total


def test_the_second_derivative_of_i1_at_and_near_zero():
    x = np.array([0.0, 1e-12, -1e-6, 0.5, -1.0, 1.0 + 1e-12, 3.0])
    expected = [i1_series(v, 2) for v in x]
    np.testing.assert_allclose(second_derivative("i1", x), expected, rtol=1e-13, atol=1e-300)


def test_the_second_derivative_of_i1e_is_minus_the_sign_of_x_next_to_its_kink():
    """i1e = exp(-|x|) i1: i1e'' = exp(-x) (i1'' - 2 i1' + i1) for x > 0, -sign(x) + O(x) beside 0, and at +-0
    the one-sided value of its side (-1 at +0, +1 at -0), by x's sign bit as the first derivative's kink."""
    x = np.array([0.0, -0.0, 1e-12, -1e-12, 2.0])
    at_2 = np.exp(-2.0) * (i1_series(2.0, 2) - 2 * i1_series(2.0, 1) + i1_series(2.0, 0))
    np.testing.assert_allclose(second_derivative("i1e", x), [-1.0, 1.0, -1.0, 1.0, at_2], rtol=1e-12, atol=1e-11)


def test_the_second_derivative_of_i0e_at_its_kink_is_the_one_sided_value():
    """i0e'' = i1e' - sign(x) i0e' = 1/2 + 1 = 3/2 on both sides of 0, and so at +-0 (by x's sign bit, matching
    i0e_grad's slope -1 at +0 and +1 at -0)."""
    x = np.array([0.0, -0.0, 1e-12, -1e-12])
    np.testing.assert_allclose(second_derivative("i0e", x), [1.5, 1.5, 1.5, 1.5], rtol=1e-11)


def test_the_bessel_grad_ops_out_is_a_shape_and_no_forward_op_computes_it():
    """i0e_grad, i1_grad and i1e_grad read out's shape only: their buffers can go, and the second derivatives of
    i0 and i0e pass x for it instead of running i1 or i1e forward."""
    assert all(SHAPE_ONLY[f"{op}_grad"] == {"out"} for op in ("i0e", "i1", "i1e"))
    for op, unneeded in (("i0", "i1"), ("i0e", "i1e")):
        net = ProgramBuilder()
        xv = net.data("x", [3], "float64", stop_gradient=False)
        slope = gradc.gradients(net.program, net.op("reduce_sum", {"X": net.op(op, {"x": xv})[0]},
                                                    {"reduce_all": True, "dim": []})[0], [xv])[0]
        gradc.gradients(net.program, net.op("reduce_sum", {"X": slope}, {"reduce_all": True, "dim": []})[0], [xv])
        assert unneeded not in [o.type for o in net.block.ops]
