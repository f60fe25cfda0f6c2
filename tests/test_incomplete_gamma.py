"""gammaincc's Q(a, y) and its slope at large a (to 1e15), against a float64 reference written here: Q as the
integral of the gamma density past y, by Gauss-Legendre panels in u = (t - a) / sqrt(a), where the density is
exp(-a g(u / sqrt(a))) / (1 + u / sqrt(a)) / sqrt(2 pi) times exp(-Stirling's tail), g(s) = s - log1p(s). The
reference shares no code with gradc's (Temme's expansion from a = 1e6, the sums and a prefactor through Stirling's
tail from a = 100 below it)."""

import math

import numpy as np
import pytest

import gradc
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
