"""The regularized upper incomplete gamma function Q(a, y) = Gamma(a, y) / Gamma(a) of gammaincc, and its slope.

By Cephes' split (as Paddle's kernel): the power series of P = 1 - Q where y < 1 or y < a, Legendre's continued
fraction of Q elsewhere, both in float64 to the last bits, with the prefactor y^a exp(-y) / Gamma(a) taken through
logs; for a < 1e-3, y < 1, where Q is tiny and 1 - P would lose it, DLMF 8.7.3 (Paddle's kernel keeps 1 - P there).
From a = 100 the prefactor's log is -a (mu - log1p(mu)) + log(a / 2 pi) / 2 - Stirling's tail, mu = (y - a) / a:
a log(y) - y - lgamma(a) cancels terms of size a log(a), which lost 3e-3 of Q(1e12, 1e12 + 1e6) (and of its slope).
From a = 1e6 Temme's uniform expansion (DLMF 8.12) replaces the sums, which need ~6 sqrt(a) terms near y = a (gradc
refused them past a ~ 2e8): Q = erfc(eta sqrt(a / 2)) / 2 + exp(-a eta^2 / 2) / sqrt(2 pi a) (c0 + c1 / a), its
next term below 1e-17 of Q there.
"""

from __future__ import annotations

import math

import numpy as np

from .special_math import lgamma

_EPSILON = np.finfo(np.float64).eps / 2   # a term below this part of the sum no longer changes it
_MOST_TERMS = 100_000   # the series needs ~ 6 sqrt(a) terms where y is near a large a: reached past a ~ 2e8
_UNDERFLOW = -np.log(np.finfo(np.float64).max)   # a prefactor exp() below this is 0 (Paddle's -MAXLOG)
_RESCALE_PAST = 2.0 ** 52   # the continued fraction's numerators and denominators are rescaled before they overflow
_STIRLING_FROM = 100.0   # from here lgamma's Stirling tail (4 terms) is exact to 1e-22
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680)   # lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2), a^-(2k-1)
_UNIFORM_FROM = 1e6   # Temme's expansion with c0, c1: its c2 / a^2 term below 1e-17 of Q from here
_SERIES_BELOW = 0.1   # mu - log1p(mu) by its series below this |mu| (25 terms: 0.1^25), where it cancels
_TAYLOR_BELOW = 1e-3   # c0, c1 by their Taylor series in eta below this |eta|, where their terms cancel
_C0_TAYLOR = (-1 / 3, 1 / 12, -2 / 135, 1 / 864, 1 / 2835)   # DLMF 8.12.9's c0(eta), from eta^0
_C1_TAYLOR = (-1 / 540, -1 / 288, 1 / 378)
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _mu_minus_log1p(mu):
    """mu - log1p(mu) >= 0 (eta^2 / 2), without cancelling for small mu."""
    small = np.abs(mu) < _SERIES_BELOW
    m = np.where(small, mu, 0.0)
    series = sum((-m) ** k / k for k in range(25, 1, -1))
    with np.errstate(divide="ignore"):
        return np.where(small, series, mu - np.log1p(mu))


def _stirling_tail(a):
    return sum(c * a ** -(2 * k + 1) for k, c in enumerate(_STIRLING))


def _log_prefactor(a, y):
    """log(y^a exp(-y) / Gamma(a)); for a >= _STIRLING_FROM without the cancelling a log(a) terms."""
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        direct = a * np.log(y) - y - lgamma(a)
        big = np.where(a >= _STIRLING_FROM, a, _STIRLING_FROM)
        stirling = -big * _mu_minus_log1p((y - big) / big) + 0.5 * np.log(big / (2 * np.pi)) - _stirling_tail(big)
    return np.where(a >= _STIRLING_FROM, stirling, direct)


def _polynomial(coefficients, x):
    return sum(c * x ** k for k, c in enumerate(coefficients))


def _upper_uniform(a, y):
    """Q(a, y) for a >= _UNIFORM_FROM by Temme's expansion: eta^2 / 2 = mu - log1p(mu), eta of mu's sign,
    c0 = 1 / mu - 1 / eta, c1 = 1 / eta^3 - 1 / mu^3 - 1 / mu^2 - 1 / (12 mu) (their Taylor series near eta = 0)."""
    mu = (y - a) / a
    half_square = _mu_minus_log1p(mu)
    eta = np.copysign(np.sqrt(2 * half_square), mu)
    near = np.abs(eta) < _TAYLOR_BELOW
    m, e = np.where(near, 1.0, mu), np.where(near, 1.0, eta)
    c0 = np.where(near, _polynomial(_C0_TAYLOR, eta), 1 / m - 1 / e)
    c1 = np.where(near, _polynomial(_C1_TAYLOR, eta), 1 / e ** 3 - 1 / m ** 3 - 1 / m ** 2 - 1 / (12 * m))
    with np.errstate(under="ignore"):
        tail = np.exp(-a * half_square) / np.sqrt(2 * np.pi * a) * (c0 + c1 / a)
    return 0.5 * _erfc(eta * np.sqrt(a / 2)) + tail




def _until_converged(a, y, state: list[np.ndarray], step) -> None:
    """Run ``step(*state) -> (new state, converged mask)`` over the elements of Q(a, y) not yet converged, in place;
    refuse those unconverged after _MOST_TERMS steps (a truncated sum would be silently wrong)."""
    active = np.arange(state[0].size)
    for _ in range(_MOST_TERMS):
        if not active.size:
            return
        values, converged = step(*(s[active] for s in state))
        for s, v in zip(state, values):
            s[active] = v
        active = active[~converged]
    raise ValueError(f"Q(x, y) at x={a[active[0]]}, y={y[active[0]]} does not converge in {_MOST_TERMS} terms "
                     "(x past ~2e8 with y near it)")


def _lower_series(a, y):
    """sum over n >= 0 of y^n / ((a + 1) ... (a + n)): P(a, y) = it y^a exp(-y) / Gamma(a + 1)."""
    state = [a.copy(), np.ones_like(a), np.ones_like(a), y.copy()]   # a + n, the term, the sum, y

    def step(r, term, total, y):
        r = r + 1
        term = term * y / r
        total = total + term
        return (r, term, total, y), ~(term > _EPSILON * total)

    _until_converged(a, y, state, step)
    return state[2]


def _upper_fraction(a, y):
    """Legendre's continued fraction of Gamma(a, y) / (y^a exp(-y)), from its convergents (Cephes' igamc)."""
    zero = np.zeros_like(a)
    y_minus = 1 - a
    z = y + y_minus + 1
    state = [y_minus, z, zero, np.ones_like(a), y.copy(), y + 1, z * y, (y + 1) / (z * y)]

    def step(c_y, z, c, p2, q2, p1, q1, ans):
        c, c_y, z = c + 1, c_y + 1, z + 2
        yc = c_y * c
        p, q = p1 * z - p2 * yc, q1 * z - q2 * yc
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(q != 0, p / q, ans)
            change = np.where(q != 0, np.abs((ans - ratio) / ratio), 1.0)
        big = np.abs(p) > _RESCALE_PAST
        shrink = np.where(big, 1 / _RESCALE_PAST, 1.0)
        return ((c_y, z, c, p1 * shrink, q1 * shrink, p * shrink, q * shrink, ratio),
                ~(change > _EPSILON))

    _until_converged(a, y, state, step)
    return state[7]


_ZETA = (np.pi ** 2 / 6, 1.2020569031595942, np.pi ** 4 / 90, 1.0369277551433699, np.pi ** 6 / 945)   # zeta(2..6)
_SMALL_A = 1e-3   # below it, with y < 1, Q ~ a E1(y) is tiny and 1 - P loses its digits


def _upper_small_a(a, y):
    """Q(a, y) for a < _SMALL_A, y < 1 (DLMF 8.7.3): 1 - y^a / Gamma(a + 1) - y^a / Gamma(a) sum over k >= 1 of
    (-y)^k / (k! (a + k)), the first term by expm1 and lgamma(1 + a) by its Taylor series (1 + a rounds a away)."""
    log_lead = a * np.log(y) + np.euler_gamma * a - sum(z * (-a) ** k / k for k, z in enumerate(_ZETA, 2))
    term, tail = np.ones_like(y), np.zeros_like(y)
    for k in range(1, 26):   # y^k / k! < 1e-25 past 25 terms
        term = term * -y / k
        tail += term / (a + k)
    return -np.expm1(log_lead) - a * np.exp(log_lead) * tail


def gammaincc(a, y):
    """Q(a, y), float64: 1 where a <= 0 or y <= 0 (as Paddle's kernel), 0 at y = +inf, 1 at a = +inf."""
    a, y = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(y, np.float64))
    a, y = a.ravel(), y.ravel()
    out = np.ones_like(a)
    inside = (a > 0) & (y > 0) & np.isfinite(a) & np.isfinite(y)
    log_prefactor = _log_prefactor(a, y)   # outside: set below
    lower = (y < 1) | (y < a)   # P by its series there, Q by its continued fraction elsewhere
    live = inside & ~(log_prefactor < _UNDERFLOW)   # past it Q is 1 (lower) or 0, as Paddle: no sum (NaN at y=1e300)
    out[inside & ~live & ~lower] = 0.0
    small = inside & (a < _SMALL_A) & (y < 1)
    out[small] = _upper_small_a(a[small], y[small])
    uniform = live & (a >= _UNIFORM_FROM)
    out[uniform] = _upper_uniform(a[uniform], y[uniform])
    series, fraction = live & lower & ~small & ~uniform, live & ~lower & ~uniform
    with np.errstate(under="ignore"):
        out[series] = 1 - _lower_series(a[series], y[series]) * np.exp(log_prefactor[series]) / a[series]
        out[fraction] = _upper_fraction(a[fraction], y[fraction]) * np.exp(log_prefactor[fraction])
    out[(y == np.inf) & (a > 0) & (a < np.inf)] = 0.0
    out[np.isnan(a) | np.isnan(y)] = np.nan
    return out


def gammaincc_slope(a, y):
    """dQ(a, y) / dy = -y^(a-1) exp(-y) / Gamma(a), through logs (no overflow of y^(a-1) or Gamma(a)); at y = 0 the
    one-sided derivative (-inf for a < 1, -1 at a = 1, 0 past it); 0 where Q is Paddle's constant 1 (a <= 0, y < 0)
    and where Q is flat at infinity (a or y = +inf)."""
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        slope = -np.exp(_log_prefactor(a, y) - np.log(y))
        at_zero = -np.power(0.0, a - 1) * np.exp(-lgamma(a))
    slope = np.where(y == 0, at_zero, slope)
    return np.where((a <= 0) | (y < 0) | np.isposinf(a) | np.isposinf(y), 0.0, slope)
