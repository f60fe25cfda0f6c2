"""The executor's erf (gelu's and the erf op's): within 1e-15 of math.erf (relatively 3e-16 near 0), in float32
the float32 rounding of math.erf's value, and its polynomial the fit its comment describes."""

import math

import numpy as np
from numpy.polynomial import chebyshev

from gradc.executor.kernels.activation import _ERF_CAP, _ERF_Q, _gelu, _gelu_grad, erf


def test_erf_is_within_1e_15_of_math_erf():
    z = np.concatenate([np.linspace(-8, 8, 160_001), np.geomspace(1e-300, 8, 20_001), -np.geomspace(1e-12, 8, 2001)])
    expected = np.array([math.erf(v) for v in z])
    assert np.max(np.abs(erf(z) - expected)) <= 1e-15


def test_small_values_are_accurate_relative_to_themselves():
    """Below |z| = 0.1 the series: within 3e-16 of erf(z) relatively, erf(+-0) is +-0, and float32's tiny
    values round as math.erf's (1 - exp(-z^2) t Q(u) left 2.2e-16 at 0, all of erf(1e-16))."""
    z = np.concatenate([np.geomspace(1e-300, 0.0999, 20_001), -np.geomspace(1e-12, 0.0999, 2001)])
    expected = np.array([math.erf(v) for v in z])
    assert np.max(np.abs(erf(z) - expected) / np.abs(expected)) <= 3e-16
    assert np.array_equal(np.signbit(erf(np.array([0.0, -0.0]))), [False, True]) and not erf(np.zeros(2)).any()
    tiny = np.array([1e-10, -3e-30, 1e-38], np.float32)
    assert np.array_equal(erf(tiny), np.array([math.erf(v) for v in tiny.astype(np.float64)], np.float32))


def test_float32_values_are_math_erf_rounded_to_float32():
    x = (np.random.default_rng(0).standard_normal(200_000) * 2).astype(np.float32)
    got = erf(x)
    assert got.dtype == np.float32
    assert np.array_equal(got, np.array([math.erf(v) for v in x.astype(np.float64)], np.float32))


def test_special_values_shapes_and_dtypes():
    got = erf(np.array([np.nan, np.inf, -np.inf, 0.0, 40.0, -40.0]))
    assert np.isnan(got[0]) and list(got[1:3]) == [1.0, -1.0] and got[3] == 0 and list(got[4:]) == [1, -1]
    assert erf(np.float32(0.5)).shape == () and erf(np.zeros((0, 3))).shape == (0, 3)
    assert erf(np.arange(3)).dtype == np.float64 and erf(np.ones(2, np.float16)).dtype == np.float32
    strided = np.linspace(-3, 3, 3 * (1 << 15) + 7).reshape(-1, 1)[::3]   # blocks of a non-contiguous input
    assert np.array_equal(erf(strided), erf(np.ascontiguousarray(strided)))
    assert np.max(np.abs(erf(strided)[:, 0] - [math.erf(v) for v in strided[:, 0]])) <= 1e-15


def test_the_polynomial_is_the_chebyshev_fit_to_math_erfc():
    """Q(u), u = (8 t - 5) / 3 for t = 1 / (1 + z / 2) in [1 / (1 + CAP / 2), 1], fitted to erfc(z) exp(z^2) / t."""
    low, nodes = 1 / (1 + _ERF_CAP / 2), 1000
    t = np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes) * (1 - low) / 2 + (1 + low) / 2
    z = 2 / t - 2
    values = [math.erfc(v) * math.exp(v * v) / w for v, w in zip(z, t)]
    u = (2 * t - (1 + low)) / (1 - low)
    fitted = chebyshev.cheb2poly(chebyshev.chebfit(u, values, len(_ERF_Q) - 1))[::-1]
    # compared by value: the small high-order coefficients of the power form move by percents with LAPACK's rounding
    grid = np.linspace(-1, 1, 4001)
    assert np.abs(np.polyval(fitted, grid) - np.polyval(_ERF_Q, grid)).max() < 4e-15
    assert (np.abs(np.polyval(_ERF_Q, u) - values) / values).max() < 1e-14


def test_gelu_in_blocks_is_gelu_of_the_whole_array():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 5, 4001)) * 3).astype(np.float32)[:, ::2]   # 30,010 values, not contiguous
    d = rng.standard_normal(x.shape).astype(np.float32)
    whole = 0.5 * x * (1 + erf(x / math.sqrt(2)))
    grad = d * (0.5 * (1 + erf(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi))
    assert _gelu(x, False).tobytes() == whole.tobytes() and _gelu(x, False).shape == x.shape
    assert _gelu_grad(x, d, False).tobytes() == grad.tobytes()
