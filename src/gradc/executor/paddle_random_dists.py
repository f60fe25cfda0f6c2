"""Paddle's CPU draws from the distributions whose samplers take a varying number of engine words a value (rejection,
inversion by products): libstdc++'s poisson_distribution, Paddle's own binomial (BTRS and geometric inversion) and
gamma (Marsaglia and Tsang, numpy's form), and the exponential. Each value is drawn as Paddle draws it, one after the
other from one engine, with C's arithmetic: a ``float`` kernel rounds each float operation to float32 (done here in
double and rounded, which gives the same float), double literals widen an expression to double. The logarithms of a
float are glibc's (gradc.executor.libm), as Paddle's."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from . import libm
from .paddle_random import Engine, canonical_of


class _CFloat(NamedTuple):
    """A kernel's C float type: its store (a Python float rounded to it) and its C library functions."""

    t: Callable[[float], float]
    log: Callable[[float], float]
    log1p: Callable[[float], float]
    pow: Callable[[float, float], float]


def _c_float(dtype) -> _CFloat:
    store = float if np.dtype(dtype) == np.float64 else lambda value: ctypes.c_float(value).value   # C's cast
    return _CFloat(store, *libm.scalar_functions(dtype))


class ScalarDraws:
    """One value at a time from an engine, each consuming its words: generate_canonical in ``dtype`` (a call), or a
    bounded int (``below``), read from the engine's current block."""

    def __init__(self, engine: Engine, dtype):
        self.engine, self.dtype, self._words, self._values, self._next = engine, np.dtype(dtype), [], [], 0
        self.c_float = _c_float(dtype)

    def _word_index(self) -> int:
        if self._next == len(self._words):
            words = self.engine.pending()
            self._words, self._values, self._next = words.tolist(), canonical_of(words, self.dtype).tolist(), 0
        self.engine.skip(1)
        self._next += 1
        return self._next - 1

    def __call__(self) -> float:
        index = self._word_index()   # first: it may read a new block into the lists
        return self._values[index]

    def below(self, bound: int) -> int:
        """uniform_int_distribution(0, bound - 1): Lemire's method, as paddle_random.integers."""
        threshold = (2 ** 64 - bound) % bound
        while True:
            index = self._word_index()
            product = self._words[index] * bound
            if product & (2 ** 64 - 1) >= threshold:
                return product >> 64

    def normal(self) -> float:
        """A fresh normal_distribution(0, 1)'s first value: Marsaglia's polar pair (as paddle_random.normal), its
        second value thrown away."""
        t = self.c_float.t
        while True:
            x, y = t(2.0 * self() - 1.0), t(2.0 * self() - 1.0)
            r2 = t(t(x * x) + t(y * y))
            if r2 <= 1 and r2 != 0:
                return t(y * t(math.sqrt(t(t(-2.0 * t(self.c_float.log(r2))) / r2))))


def exponential(engine: Engine, count: int, rate: float, dtype=np.float32) -> np.ndarray:
    """Paddle's exponential_: -1/lambda log(1 - u), u a uniform in [0, 1) of the kernel's float, each step rounded."""
    dtype = np.dtype(dtype)
    u = canonical_of(engine.words(count), dtype)
    logs = libm.log(dtype.type(1) - u)
    return (dtype.type(-1.0) / dtype.type(rate)) * logs


def poisson(engine: Engine, means: np.ndarray) -> np.ndarray:
    """std::poisson_distribution<int>(mean) a value, in order: products of uniforms below e^-mean under 12, else
    Devroye's rejection (libstdc++'s), in double."""
    uniforms = ScalarDraws(engine, np.float64)
    out = np.empty(len(means), np.float64)
    for i, mean in enumerate(np.asarray(means, np.float64).tolist()):
        out[i] = _poisson_small(uniforms, mean) if mean < 12 else _poisson_large(uniforms, mean)
    return out


def _poisson_small(uniforms: ScalarDraws, mean: float) -> int:
    threshold, product, count = math.exp(-mean), 1.0, 0
    while True:
        product *= uniforms()
        count += 1
        if not product > threshold:
            return count - 1


def _poisson_large(uniforms: ScalarDraws, mean: float) -> int:
    m = math.floor(mean)
    log_mean, log_factorial, root = math.log(mean), libm.lgamma(m + 1), math.sqrt(m)
    quarter_pi = 0.7853981633974483
    d = float(math.floor(max(6.0, min(m, math.sqrt(2 * m * math.log(32 * m / quarter_pi)))) + 0.5))   # C's round
    cx = 2 * m + d
    half_root_cx, inverse_cx = math.sqrt(cx / 2), 1 / cx
    c1 = root * 1.2533141373155003
    c2 = math.sqrt(quarter_pi * cx) * math.exp(inverse_cx) + c1
    c3, c4 = c2 + 1, c2 + 2
    c5 = c4 + 1.0129030479320018
    c = 2 * cx * math.exp(-d * inverse_cx * (1 + d / 2)) / d + c5
    two_cx, limit = 2 * (2 * m + d), 2 ** 31 - 1 + (1 - 2 ** -52) / 2
    normals = _PolarNormals(uniforms)
    while True:
        u = c * uniforms()
        e = -math.log(1.0 - uniforms())
        w = 0.0
        if u <= c1:
            n = normals()
            x = math.floor(-abs(n) * root - 1)
            w = -n * n / 2
            if x < -m:
                continue
        elif u <= c2:
            n = normals()
            y = 1 + abs(n) * half_root_cx
            x = math.ceil(y)
            w = y * (2 - y) * inverse_cx
            if x > d:
                continue
        elif u <= c3:
            x = -1.0
        elif u <= c4:
            x = 0.0
        elif u <= c5:
            x, w = 1.0, 1 / 78
        else:
            y = d + -math.log(1.0 - uniforms()) * two_cx / d
            x = math.ceil(y)
            w = -d * inverse_cx * (1 + y / 2)
        rejected = w - e - x * log_mean > log_factorial - libm.lgamma(x + m + 1) or x + m >= limit
        if not rejected:
            return int(x + m + (1 - 2 ** -52) / 2)


class _PolarNormals:
    """The normal_distribution<double> one poisson_distribution holds: a polar pair, its second value kept for the
    next call."""

    def __init__(self, uniforms: ScalarDraws):
        self.uniforms, self.saved = uniforms, None

    def __call__(self) -> float:
        if self.saved is not None:
            value, self.saved = self.saved, None
            return value
        while True:
            x, y = 2.0 * self.uniforms() - 1.0, 2.0 * self.uniforms() - 1.0
            r2 = x * x + y * y
            if r2 <= 1.0 and r2 != 0.0:
                break
        scale = math.sqrt(-2 * math.log(r2) / r2)
        self.saved = x * scale
        return y * scale


_TAILS = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
          0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287)


def binomial(engine: Engine, counts: np.ndarray, probs: np.ndarray, dtype=np.float32) -> np.ndarray:
    """Paddle's binomial a value, in order, in the kernel's float: BTRS when n p' >= 10 (p' the smaller of p, 1 - p),
    else the count of geometric jumps within n; n - draw when p > 0.5."""
    uniforms = ScalarDraws(engine, dtype)
    c_float, t = uniforms.c_float, uniforms.c_float.t
    out = np.empty(len(counts), np.int64)
    for i, (n, p) in enumerate(zip(np.asarray(counts).tolist(), np.asarray(probs).tolist())):
        if n <= 0 or p <= 0:
            out[i] = 0
        elif p >= 1:
            out[i] = int(n)
        else:
            q = p if p <= 0.5 else t(1.0 - p)
            drawn = _btrs(uniforms, c_float, n, q) if t(n * q) >= 10 else _inversion(uniforms, c_float, n, q)
            out[i] = drawn if p <= 0.5 else int(n) - drawn
    return out


def _tail(t, k: int) -> float:
    if k <= 9:
        return t(_TAILS[k])
    square = t((k + 1) * (k + 1))
    return t((1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / square) / square) / (k + 1))


def _btrs(uniforms: ScalarDraws, c_float: _CFloat, n: float, p: float) -> int:
    t, log = c_float.t, c_float.log
    stddev = t(math.sqrt(t(t(n * p) * t(1 - p))))
    b = t(1.15 + 2.53 * stddev)
    a = t(-0.0873 + 0.0248 * b + 0.01 * p)
    c = t(t(n * p) + 0.5)
    v_r, r = t(0.92 - 4.2 / b), t(p / t(1 - p))
    alpha = t((2.83 + 5.1 / b) * stddev)
    m = math.floor(t(t(n + 1) * p))
    while True:
        u = t(uniforms() - 0.5)
        v = uniforms()
        us = t(0.5 - abs(u))
        k = math.floor(t(t(t(t(t(2 * a) / us) + b) * u) + c))
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = t(log(t(t(v * alpha) / t(t(a / t(us * us)) + b))))
        bound = ((m + 0.5) * t(log(t(t(m + 1) / t(r * t(t(n - m) + 1)))))
                 + t(t(n + 1) * t(log(t(t(t(n - m) + 1) / t(t(n - t(k)) + 1)))))
                 + (k + 0.5) * t(log(t(t(r * t(t(n - t(k)) + 1)) / t(k + 1))))
                 + _tail(t, int(m)) + _tail(t, int(t(n - m))) - _tail(t, k) - _tail(t, int(t(n - t(k)))))
        if v <= t(bound):
            return k


def _inversion(uniforms: ScalarDraws, c_float: _CFloat, n: float, p: float) -> int:
    t = c_float.t
    log_q, total, count = t(c_float.log1p(-p)), 0.0, 0
    while True:
        u = uniforms()
        total = t(total + t(math.ceil(t(t(c_float.log(u)) / log_q))))
        if total > n:
            return count
        count += 1


def gamma(engine: Engine, alphas: np.ndarray, dtype=np.float32) -> np.ndarray:
    """Paddle's gamma sampler (numpy's Marsaglia and Tsang) a value, in order, in the kernel's float: alpha < 1
    boosted by one uniform, then normal (a fresh polar pair) and uniform draws until accepted; at least the float's
    smallest normal number."""
    dtype, uniforms = np.dtype(dtype), ScalarDraws(engine, dtype)
    c_float, t, log = uniforms.c_float, uniforms.c_float.t, uniforms.c_float.log
    third, constant = float(np.float32(1 / 3)), float(np.float32(0.0331))   # float literals, also in double kernels
    out = np.empty(len(alphas), dtype)
    for i, alpha in enumerate(np.asarray(alphas, dtype).tolist()):
        scale = 1.0
        if alpha < 1:
            if alpha == 0:
                out[i] = np.finfo(dtype).tiny
                continue
            scale = t(c_float.pow(t(1 - uniforms()), t(1.0 / alpha)))
            alpha = t(alpha + 1)
        d = t(alpha - third)
        c = t(1.0 / t(math.sqrt(t(9.0 * d))))
        while True:
            y = 0.0
            while y <= 0:
                x = uniforms.normal()
                y = t(1.0 + t(c * x))
            v = t(t(y * y) * y)
            u = t(1 - uniforms())
            xx = t(x * x)
            accepted = u < t(1.0 - t(t(constant * xx) * xx))
            if accepted or t(log(u)) < t(t(0.5 * xx) + t(d * t(t(1.0 - v) + t(log(v))))):
                break
        out[i] = max(t(t(scale * d) * v), np.finfo(dtype).tiny)
    return out
