"""Kernels of gradc.ops.special_math: erfinv and the gamma family (lgamma, digamma, polygamma); the Bessel
functions are in special_math_bessel. Each function computes in float64 with numpy only and returns float64;
the kernels cast to the input's dtype.

lgamma: lgamma(2 + z) = (1 - gamma) z + sum_k (-1)^k (zeta(k) - 1) z^k / k on [1.5, 2.5), reached by the
recurrence Gamma(x + 1) = x Gamma(x) (no cancellation near the zeros at 1 and 2); Stirling's series from 10 on;
reflection below 0. digamma: recurrence up to 10, then its asymptotic series; reflection below 0. polygamma:
(-1)^(n+1) n! zeta(n + 1, x) with the Hurwitz zeta summed directly and finished by Euler-Maclaurin; below 0 the
reflection psi_n(x) = (-1)^n psi_n(1 - x) - pi^(n+1) cot^(n)(pi x). erfinv: a closed-form first guess (Winitzki)
refined by Halley steps on erf (gradc.executor.kernels.activation's), or on erfc in the tail (1 - erf, then
Laplace's continued fraction), where erf's absolute error would swamp 1 - |x|.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
from numpy.polynomial import polynomial

from .activation import erf, unary


def _bernoulli(count: int) -> list[Fraction]:
    """B_0 .. B_{count-1} (Akiyama-Tanigawa), exact."""
    row, numbers = [Fraction(0)] * count, []
    for m in range(count):
        row[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            row[j - 1] = j * (row[j - 1] - row[j])
        numbers.append(row[0])
    return numbers


_B2K = _bernoulli(26)[2::2]   # B_2, B_4, ..., B_24
_STIRLING = [float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(_B2K[:8], 1)]   # lgamma, x^-(2k-1)
_DIGAMMA_TAIL = [float(b / (2 * k)) for k, b in enumerate(_B2K[:8], 1)]          # digamma, x^-2k
_EULER_MACLAURIN = [float(b / math.factorial(2 * k)) for k, b in enumerate(_B2K, 1)]
_ASYMPTOTIC_FROM = 10.0   # where the asymptotic series of lgamma and digamma are accurate to double precision


def hurwitz_zeta(s: int, q):
    """zeta(s, q) = sum over k >= 0 of (q + k)^-s, for an integer s >= 2 and q > 0 (+inf at q = 0)."""
    q = np.asarray(q, np.float64)
    # summed directly; from q + terms on, the Euler-Maclaurin corrections shrink fast (past s = 200 the series
    # serves only polygamma orders whose n! overflows: the count stays bounded for any attribute n)
    terms = 10 + min(s, 200)
    total = sum((q + k) ** -s for k in range(terms))
    w = q + terms
    total += w ** (1 - s) / (s - 1) + 0.5 * w ** -s
    rising, power = float(s), w ** (-s - 1)   # s (s+1) ... (s+2k-2) and w^-(s+2k-1)
    for k, coefficient in enumerate(_EULER_MACLAURIN, 1):
        total += coefficient * rising * power
        rising *= (s + 2 * k - 1) * (s + 2 * k)
        power = power / (w * w)
    return total


_ZETA_MINUS_ONE = [0.0, 0.0] + [float(hurwitz_zeta(k, 2.0)) for k in range(2, 32)]   # zeta(k) - 1


def _lgamma_near_two(z):
    """lgamma(2 + z) for |z| <= 1/2 by its Taylor series (terms shrink like 4^-k)."""
    total = np.zeros_like(z)
    for k in range(len(_ZETA_MINUS_ONE) - 1, 1, -1):
        total = (total + (-1) ** k * _ZETA_MINUS_ONE[k] / k) * z
    return (total + 1 - np.euler_gamma) * z


def _lgamma_positive(x):
    """lgamma of x > 0."""
    out = np.empty_like(x)
    large = x >= _ASYMPTOTIC_FROM
    y = x[large]
    series = sum(c * y ** (1 - 2 * k) for k, c in enumerate(_STIRLING, 1))
    out[large] = (y - 0.5) * np.log(y) - y + 0.5 * math.log(2 * math.pi) + series
    z = x[~large]
    # lgamma(z) = lgamma(2 + t) + log_factor by Gamma(z + 1) = z Gamma(z), t kept exact (z + 1 - 2 would round)
    t = np.where(z < 0.5, z, np.where(z < 1.5, z - 1, z - 2))
    log_factor = np.where(z < 0.5, -np.log(z) - np.log1p(z), np.where(z < 1.5, -np.log1p(z - 1), 0.0))
    for _ in range(int(_ASYMPTOTIC_FROM) - 2):
        high = t >= 0.5
        t[high] -= 1
        log_factor[high] += np.log(t[high] + 2)
    out[~large] = _lgamma_near_two(t) + log_factor
    return out


def _pi_fraction(x):
    """x - round(x): sin and tan of pi x from it keep their accuracy for large |x|."""
    return x - np.round(x)


def lgamma(x):
    """log|Gamma(x)|: +inf at the poles (0, negative integers) and at +-inf, as Paddle."""
    x = np.asarray(x, np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        positive = _lgamma_positive(np.where(x > 0, x, 1 - x))   # reflection partner 1 - x >= 1 below 0
        reflected = np.log(math.pi / np.abs(np.sin(math.pi * _pi_fraction(x)))) - positive
        out = np.where(x > 0, positive, reflected)
    return np.where(np.isinf(x), np.inf, out)


def _digamma_positive(x):
    """digamma of x >= 0 (-inf at 0): psi(x) = psi(x + 10) - sum 1 / (x + k) over k < 10, then the asymptotic
    series (the recurrence for every x: fewer passes than picking the small ones)."""
    steps = int(_ASYMPTOTIC_FROM)
    shift = -sum(1 / (x + k) for k in range(steps))
    z = x + steps
    inverse_square = 1 / (z * z)
    tail = sum(c * inverse_square ** k for k, c in enumerate(_DIGAMMA_TAIL, 1))
    return np.log(z) - 0.5 / z - tail + shift


def digamma(x):
    """digamma: at 0 -inf (+0) or +inf (-0), NaN at the negative integers and at -inf, as Paddle."""
    x = np.asarray(x, np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        positive = _digamma_positive(np.where(x < 0, 1 - x, x))
        fraction = _pi_fraction(x)
        out = np.where(x < 0, positive - math.pi / np.tan(math.pi * fraction), positive)
    out = np.where((x < 0) & (fraction == 0), np.nan, out)
    return np.where(x == 0, -np.copysign(np.inf, x), out)


_LARGEST_FACTORIAL = 170   # 171! overflows doubles


def _cot_pi(r):
    """cot(pi r) for |r| <= 1/2, exactly 0 at +-1/2 (where 1 / tan is 6e-17, which the polynomials of high
    derivatives magnify past the value itself)."""
    return np.copysign(np.sin(math.pi * (0.5 - np.abs(r))), r) / np.sin(math.pi * np.abs(r))


@functools.cache   # polygamma's kernels ask for the same few orders on every call
def _cot_derivative(n: int) -> tuple[float, ...]:
    """Coefficients (lowest first) of the polynomial P with d^n/dy^n cot(y) = P(cot(y))."""
    coefficients = np.array([0.0, 1.0])
    for _ in range(n):
        coefficients = -polynomial.polymul([1.0, 0.0, 1.0], polynomial.polyder(coefficients))
    return tuple(coefficients)


def polygamma(n: int, x):
    """The n-th derivative of digamma. At the poles (0, negative integers) and at -inf (-1)^(n+1) inf, as
    Paddle; at +inf 0 for n >= 1 (Paddle: NaN). Below 0 by reflection: the Hurwitz series from x < 0 (Paddle's
    way) cancels terms near the poles far larger than the value (at x = -64.5, n = 6, Paddle is 0.5% off)."""
    if n == 0:
        return digamma(x)
    x = np.asarray(x, np.float64)
    sign = 1.0 if n % 2 else -1.0
    factorial = float(math.factorial(n)) if n <= _LARGEST_FACTORIAL else math.inf
    negative = x < 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = sign * factorial * hurwitz_zeta(n + 1, np.where(negative, 1 - x, x))
        if negative.any() and n > _LARGEST_FACTORIAL:   # n! overflows: the reflection is inf - inf (its
            out = np.where(negative, np.nan, out)           # polynomial alone would cost n^2)
        elif negative.any():
            cot = _cot_pi(_pi_fraction(x))
            reflected = (-1) ** n * out - math.pi ** (n + 1) * polynomial.polyval(cot, _cot_derivative(n))
            out = np.where(negative, reflected, out)
    pole = (x <= 0) & (x == np.floor(x))
    return np.where(pole, sign * np.inf, out)


_HALLEY_STEPS = 3   # Winitzki's guess is within 2e-3 (relative); each Halley step cubes the error
_WINITZKI_A = 0.147
_ERFC_TAIL_FROM = 2.0   # from here on erfc by its continued fraction: 1 - erf would lose digits
_ERFC_FRACTION_TERMS = 80


def erfc_tail(y):
    """erfc(y) for y >= 2 by Laplace's continued fraction exp(-y^2) / sqrt(pi) / (y + (1/2) / (y + 1 / (y + ...)))."""
    denominator = np.array(y, np.float64)
    for k in range(_ERFC_FRACTION_TERMS, 0, -1):
        denominator = y + (k / 2) / denominator
    return np.exp(-y * y) / (math.sqrt(math.pi) * denominator)


def _erf_residual(y, a, complement):
    """erf(y) - a for y = erfinv(a) roughly; in the tail from erfc(y) and 1 - a, exact there."""
    residual = np.empty_like(y)
    body = ~(a >= 0.5)   # NaN too
    residual[body] = erf(y[body]) - a[body]
    far = ~body & (y >= _ERFC_TAIL_FROM)
    residual[far] = complement[far] - erfc_tail(y[far])
    near = ~body & ~far
    residual[near] = complement[near] - (1 - erf(y[near]))
    return residual


def erfinv(x):
    """The inverse of erf on [-1, 1]; +-inf at +-1 and, as Paddle, beyond them."""
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    complement = 1 - a   # exact where the tail needs it (a >= 1/2)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_term = np.log(complement * (1 + a))   # log(1 - a^2)
        half = 2 / (math.pi * _WINITZKI_A) + log_term / 2
        y = np.sqrt(np.sqrt(half * half - log_term / _WINITZKI_A) - half)
        for _ in range(_HALLEY_STEPS):
            step = _erf_residual(y, a, complement) / (2 / math.sqrt(math.pi) * np.exp(-y * y))
            y = y - step / (1 + y * step)   # Halley: erf'' / erf' = -2y
    y = np.where(a >= 1, np.inf, y)
    return np.copysign(y, x)


def _like(x, value):
    """value (float64) in x's float dtype: inference refuses integer x."""
    return value.astype(x.dtype, copy=False)


def elementwise(name: str, function, derivative, uses: str, lowercase: bool = False, shape_only=()) -> None:
    """Kernels (activation.unary's) of an op out = function(x) and its grad dx = dout * derivative(v), v the slot
    ``uses``, computed in float64 and returned in x's dtype; ``shape_only``: grad slots whose values go unread."""
    unary(name, lambda x, k: _like(x, function(x, k)), lambda v, dout, k: _like(dout, dout * derivative(v, k)), uses,
          lowercase, shape_only)


elementwise("erfinv", lambda x, k: erfinv(x),
            lambda out, k: math.sqrt(math.pi) / 2 * np.exp(np.square(out, dtype=np.float64)), "Out")
elementwise("lgamma", lambda x, k: lgamma(x), lambda x, k: digamma(x), "X")
elementwise("digamma", lambda x, k: digamma(x), lambda x, k: polygamma(1, x), "X")
elementwise("polygamma", lambda x, k: polygamma(k.attr("n"), x), lambda x, k: polygamma(k.attr("n") + 1, x), "x",
            lowercase=True)
