"""Paddle's truncated normal draws, bit for bit: one uniform draw in [FLT_MIN, 1) an element, spread over
[Phi(a'), Phi(b')] (a', b' the standardised bounds) and mapped back through Paddle's own erfinv, a rational
approximation (three ranges, Horner in the kernel's float) rather than the true inverse, then clamped to [a, b]. Each
step is rounded where Paddle's C++ rounds it: its double literals widen a float expression to double."""

from __future__ import annotations

import math

import numpy as np

from . import libm
from .paddle_random import Engine, uniform

# numerator and denominator coefficients, lowest power first: |x| <= 0.85, then r = sqrt(ln 2 - log(1 - |x|)) <= 5,
# then beyond
_CENTRAL = ((1.1975323115670912564578e0, 4.7072688112383978012285e1, 6.9706266534389598238465e2,
             4.8548868893843886794648e3, 1.6235862515167575384252e4, 2.3782041382114385731252e4,
             1.1819493347062294404278e4, 8.8709406962545514830200e2),
            (1.0, 4.2313330701600911252e1, 6.8718700749205790830e2, 5.3941960214247511077e3,
             2.1213794301586595867e4, 3.9307895800092710610e4, 2.8729085735721942674e4, 5.2264952788528545610e3))
_NEAR_TAIL = ((1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0,
               3.64784832476320460504e0, 1.27045825245236838258e0, 2.41780725177450611770e-1,
               2.27238449892691845833e-2, 7.74545014278341407640e-4),
              (1.4142135623730950488016887e0, 2.9036514445419946173133295e0, 2.3707661626024532365971225e0,
               9.7547832001787427186894837e-1, 2.0945065210512749128288442e-1, 2.1494160384252876777097297e-2,
               7.7441459065157709165577218e-4, 1.4859850019840355905497876e-9))
_FAR_TAIL = ((6.65790464350110377720e0, 5.46378491116411436990e0, 1.78482653991729133580e0,
              2.96560571828504891230e-1, 2.65321895265761230930e-2, 1.24266094738807843860e-3,
              2.71155556874348757815e-5, 2.01033439929228813265e-7),
             (1.414213562373095048801689e0, 8.482908416595164588112026e-1, 1.936480946950659106176712e-1,
              2.103693768272068968719679e-2, 1.112800997078859844711555e-3, 2.611088405080593625138020e-5,
              2.010321207683943062279931e-7, 2.891024605872965461538222e-15))


def _polynomials(coefficients, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """num(r) and den(r), each by Horner's rule with every step rounded to r's float."""
    float_type = r.dtype.type
    num, den = (np.full(r.shape, float_type(c[-1])) for c in coefficients)
    for a, b in zip(coefficients[0][-2::-1], coefficients[1][-2::-1]):
        num, den = num * r + float_type(a), den * r + float_type(b)
    return num, den


def _ratio(coefficients, r: np.ndarray) -> np.ndarray:
    num, den = _polynomials(coefficients, r)
    return num / den


def paddle_erfinv(x: np.ndarray) -> np.ndarray:
    """Paddle's erfinv of x in [-1, 1], in x's float (float32 or float64)."""
    float_type, wide = x.dtype.type, x.astype(np.float64)
    num, den = _polynomials(_CENTRAL, (0.180625 - 0.25 * wide * wide).astype(x.dtype))
    out = x * num / den   # (x num) / den, as Paddle's expression groups it
    tails = (np.abs(x) > 0.85) & (np.abs(x) < 1)
    if tails.any():
        r = np.sqrt(np.float64(float_type(math.log(2))) - libm.log(1.0 - np.abs(wide[tails]))).astype(x.dtype)
        value, near = np.empty(r.shape, x.dtype), r <= 5.0
        value[near] = _ratio(_NEAR_TAIL, (r[near].astype(np.float64) - 1.6).astype(x.dtype))
        value[~near] = _ratio(_FAR_TAIL, (r[~near].astype(np.float64) - 5.0).astype(x.dtype))
        out[tails] = np.where(x[tails] < 0, -value, value)
    return np.where(np.abs(x) == 1, np.copysign(float_type(np.inf), x), out)   # as Paddle's: +-inf at +-1


def truncated_normal(engine: Engine, count: int, mean: float, std: float, low: float, high: float,
                     dtype=np.float32) -> np.ndarray:
    """``count`` draws of Paddle's truncated_gaussian_random in ``dtype`` (its kernel's float: float or double)."""
    float_type = np.dtype(dtype).type
    # the kernel takes its attributes as float, whatever the dtype
    mean, std, low, high = (float_type(np.float32(value)) for value in (mean, std, low, high))
    low_cdf, high_cdf = (float_type((1.0 + libm.erf(float((bound - mean) / std) / math.sqrt(2.0))) / 2.0)
                         for bound in (low, high))
    p = low_cdf + (high_cdf - low_cdf) * uniform(engine, count, np.finfo(np.float32).tiny, 1.0, dtype)
    drawn = math.sqrt(2.0) * paddle_erfinv(float_type(2) * p - float_type(1)).astype(np.float64) * float(std) + mean
    return np.clip(drawn.astype(dtype), low, high)
