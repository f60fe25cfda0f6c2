"""gammaincc's Q(a, y) and its slope: pinned values (mpmath, closed forms), its edges, where gradc departs from
Paddle 3.3.1, and at large a (to 1e15) against a float64 reference written here: Q as the
integral of the gamma density past y, by Gauss-Legendre panels in u = (t - a) / sqrt(a), where the density is
exp(-a g(u / sqrt(a))) / (1 + u / sqrt(a)) / sqrt(2 pi) times exp(-Stirling's tail), g(s) = s - log1p(s). The
reference shares no code with gradc's (Temme's expansion from a = 1e6, the sums and a prefactor through Stirling's
tail from a = 100 below it)."""

import math

import numpy as np
import pytest

import gradc
from gradc.errors import ExecutionError
from gradc.ir import to_var_type
from test_extra_math import program_of, run

NODES, WEIGHTS = np.polynomial.legendre.leggauss(20)
PANEL = 0.25          # in standard deviations: the density is smooth at this width, 20 nodes reach 1e-16
REACH = 40.0          # the density past u = 40 is below exp(-800)
STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680)


def s_minus_log1p(s: np.ndarray) -> np.ndarray:
    """s - log1p(s), by its series below |s| = 0.01 (12 terms) where the difference cancels."""
    series = sum((-s) ** k / k for k in range(2, 14))
    return np.where(np.abs(s) < 0.01, series, s - np.log1p(np.where(np.abs(s) < 0.01, 1.0, s)))


def density(a: float, u: np.ndarray) -> np.ndarray:
    """dQ/du at y = a + u sqrt(a), negated: the gamma density in u."""
    s = u / np.sqrt(a)
    tail = sum(c * a ** -(2 * k + 1) for k, c in enumerate(STIRLING))
    return np.exp(-a * s_minus_log1p(s) - tail) / (1 + s) / math.sqrt(2 * math.pi)


def reference(a: float, y: float) -> float:
    z = (y - a) / math.sqrt(a)
    edges = np.arange(z, REACH + PANEL, PANEL)
    middles, halves = (edges[1:] + edges[:-1]) / 2, (edges[1:] - edges[:-1]) / 2
    u = middles[:, None] + halves[:, None] * NODES
    return float(np.sum(halves[:, None] * WEIGHTS * density(a, u)))


POINTS = [(a, z) for a in (2e4, 3e6, 1e9, 1e12, 1e15) for z in (-6.0, -1.0, -1e-7, 0.0, 0.3, 1.0, 4.0, 9.0)]


@pytest.mark.parametrize("a", sorted({a for a, _ in POINTS}))
def test_gammaincc_at_large_x_against_the_integral_of_its_density(a):
    """Q(1e12, 1e12 + 1e6) was 0.15895 (3e-3 off, the a log(a) terms of the prefactor's log cancelling), and past
    x ~ 2e8 a y near x was refused (the sums need ~6 sqrt(x) terms)."""
    z = np.array([z for b, z in POINTS if b == a])
    y = a + z * math.sqrt(a)
    (out,) = run("gammaincc", {"x": np.full(len(z), a), "y": y}, ["out"])
    expected = np.array([reference(a, v) for v in y])
    np.testing.assert_allclose(out, expected, rtol=5e-14, atol=0)   # Q ~ 1e-19 at z = 9: an exponent of 40, 40 eps


def test_gammaincc_grad_at_large_x_is_the_density():
    """y@GRAD = -dOut y^(x-1) exp(-y) / Gamma(x): the density, to 1e-14 (it was 4e-3 off at x = 1e12)."""
    a = np.array([2e4, 3e6, 1e9, 1e12, 1e12, 1e15])
    z = np.array([0.5, -1.0, 2.0, 1.0, 0.0, -3.0])
    y = a + z * np.sqrt(a)
    program, feed = program_of("gammaincc", {"x": a, "y": y}, ["out"], grads=("y",))
    total = program.global_block.create_var("total", [], gradc.ir.VarType.FP64)
    program.global_block.append_op("reduce_sum", {"X": ["out"]}, {"Out": [total.name]}, {"reduce_all": True})
    gradc.append_backward(program, "total")
    (grad,) = gradc.Executor().run(program, feed, ["y0@GRAD"], gradc.Scope())
    expected = -density(a, (y - a) / np.sqrt(a)) / np.sqrt(a)   # at the y fed (rounded)
    np.testing.assert_allclose(grad, expected, rtol=1e-14, atol=0)


def test_gammaincc_recurrence_at_large_x():
    """Q(x + 1, y) - Q(x, y) = y^x exp(-y) / Gamma(x + 1) = -y dQ(x, y)/dy / x: values and slope agree at x = 1e12
    (the difference, 4e-7, keeps 1e-9 of its digits)."""
    from gradc.executor.kernels.incomplete_gamma import gammaincc, gammaincc_slope
    a = np.array([1e12, 1e12, 3e6])
    y = a + np.array([1.0, -2.0, 0.5]) * np.sqrt(a)
    step = gammaincc(a + 1, y) - gammaincc(a, y)
    np.testing.assert_allclose(step, -y * gammaincc_slope(a, y) / a, rtol=2e-9)


# Q(a, y) by mpmath at 30 digits; Q(1/2, y) = erfc(sqrt(y)) and Q(3, y) = exp(-y) (1 + y + y^2 / 2) exactly
GAMMAINCC = [(0.5, 0.2, math.erfc(math.sqrt(0.2))), (3.0, 2.5, math.exp(-2.5) * (1 + 2.5 + 2.5 ** 2 / 2)),
             (40.0, 35.0, 0.78019044517468203442), (100.0, 110.0, 0.1582786700600870938),
             (250.0, 240.0, 0.73234993014598419919)]


def test_gammaincc_to_1e_12_on_both_sides_of_its_split():
    a, y, expected = map(np.array, zip(*GAMMAINCC))
    (out,) = run("gammaincc", {"x": a, "y": y}, ["out"])
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=0)


def test_gammaincc_is_paddles_constant_1_outside_its_domain_and_flat_there():
    """Paddle's kernel gives 1 where x <= 0 or y <= 0; there gradc's y@GRAD is 0, the slope of that constant
    (Paddle's formula gives NaN or a nonzero slope). At y = 0 the one-sided slope -y^(x-1) / Gamma(x)."""
    from gradc.executor.kernels.incomplete_gamma import gammaincc, gammaincc_slope
    a = np.array([-1.0, 0.0, 2.0, 2.0, 0.5, 1.0, 2.0])
    y = np.array([1.0, 1.0, -1.0, 0.0, 0.0, 0.0, np.inf])
    np.testing.assert_array_equal(gammaincc(a, y), [1, 1, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(gammaincc_slope(a, y)[:6], [0, 0, 0, 0, -np.inf, -1])


def test_gammaincc_stays_a_probability_where_its_prefactor_under_or_overflows():
    """Q(3, 1e300) was NaN (its continued fraction overflowed; Paddle's kernel stops where the prefactor
    underflows: 0). Q's slope is 0 where Q is flat: a or y infinite."""
    from gradc.executor.kernels.incomplete_gamma import gammaincc, gammaincc_slope
    np.testing.assert_array_equal(gammaincc(np.array([3.0, 2.0]), np.array([1e300, 800.0])), [0.0, 0.0])
    np.testing.assert_array_equal(gammaincc_slope(np.array([np.inf, 2.0]), np.array([2.0, np.inf])), [0.0, 0.0])


def test_gammaincc_keeps_its_digits_at_tiny_x():
    """For x -> 0, Q(x, y) = x E1(y) (1 + O(x)): 1 - P kept only 1e-16 of absolute accuracy (Q(1e-20, 1e-20) was
    7.8e-16 for 4.5e-19 and Q(1e-300, 1e-300) -2.4e-14, as Paddle's); across the switch at x = 1e-3 the two ways
    agree."""
    from gradc.executor.kernels.incomplete_gamma import gammaincc
    e1_half = 0.5597735947761608   # E1(0.5)
    out = gammaincc(np.array([1e-20, 1e-10, 1e-300]), np.array([1e-20, 0.5, 1e-300]))
    np.testing.assert_allclose(out, [1e-20 * (46.051701859880914 - np.euler_gamma), 1e-10 * e1_half,
                                     1e-300 * (690.7755278982137 - np.euler_gamma)], rtol=1e-8)
    below, above = gammaincc(np.array([1e-3 * (1 - 1e-12), 1e-3 * (1 + 1e-12)]), np.array([0.3, 0.3]))
    assert abs(below - above) < 1e-11 * above


def test_gammaincc_grad_where_paddles_overflows():
    """Paddle 3.3.1's y@GRAD computes y^(x-1) / tgamma(x), which overflows: NaN at x = 40 in float32 and at x = 200
    in float64. gradc goes through logs: the slope of Q by central differences, in float32 too."""
    x, y = np.array([40.0, 200.0]), np.array([35.0, 190.0])
    program, feed = program_of("gammaincc", {"x": x.astype(np.float32), "y": y.astype(np.float32)}, ["out"],
                               grads=("y",))
    from gradc.executor.kernels.incomplete_gamma import gammaincc
    numeric = (gammaincc(x, y + 1e-5) - gammaincc(x, y - 1e-5)) / 2e-5
    block = program.global_block
    block.create_var("total", [], to_var_type(np.dtype("float32")))
    block.append_op("reduce_sum", {"X": ["out"]}, {"Out": ["total"]}, {"reduce_all": True})
    gradc.append_backward(program, "total")
    (grad,) = gradc.Executor().run(program, feed, ["y0@GRAD"], gradc.Scope())
    assert grad.dtype == np.float32
    np.testing.assert_allclose(grad, numeric, rtol=1e-5)


def test_gammaincc_refuses_a_sum_it_cannot_finish(monkeypatch):
    """Near y = x the terms needed grow as sqrt(x) (~1900 at x = 1e5; from x = 1e6 Temme's expansion replaces the
    sums): a truncated sum was returned as Q (0.50079 at x = 1e9, y = x - 1, where Q is 0.500008); a sum unfinished
    after the bound names the point. The bound is lowered here to reach it."""
    from gradc.executor.kernels import incomplete_gamma
    monkeypatch.setattr(incomplete_gamma, "_MOST_TERMS", 50)
    for y in (1e5 - 1, 1e5):   # the series (y < x), then the continued fraction
        with pytest.raises(ExecutionError, match=rf"gammaincc.*Q\(x, y\) at x=100000.0, y={y} does not converge"):
            run("gammaincc", {"x": np.array([3.0, 1e5]), "y": np.array([2.0, y])}, ["out"])
