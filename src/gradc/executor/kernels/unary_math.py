"""Kernels of gradc.ops.unary_math: one row per op, forward and grad side by side. Grads use factored forms
(1 - x^2 as (1 - x)(1 + x), sqrt(x^2 + 1) as hypot) that keep their accuracy near the poles and do not
overflow for large x where Paddle's x^2 does."""

from __future__ import annotations

import math

import numpy as np

from .activation import erf, unary


def _round(x, k):
    """Ties to even at `decimals` digits (left of the point when negative), with the power of ten in x's dtype
    as Paddle's kernel: past float32's range it is inf, and Paddle's NaN follows."""
    decimals = k.attr("decimals")
    if np.issubdtype(x.dtype, np.integer):
        return x
    if decimals == 0:
        return np.rint(x)
    with np.errstate(over="ignore", invalid="ignore"):
        scale = np.power(np.asarray(10.0, x.dtype), abs(decimals))
        return np.rint(x * scale) / scale if decimals > 0 else np.rint(x / scale) * scale


def _logit(x, k):
    """log(x / (1 - x)) of x clipped to [eps, 1 - eps] (bounds in x's dtype, as Paddle); with eps 0, NaN
    outside [0, 1]. The clip is Paddle's: down to 1 - eps first, then up to eps, so an eps above 1/2 makes
    every value eps. In float64, rounded once: near x = 1/2 the float32 quotient's rounding is most of log's value."""
    eps = k.attr("eps")
    low, high = np.asarray(eps, x.dtype), np.asarray(1.0 - eps, x.dtype)
    t = np.maximum(np.minimum(x, high), low).astype(np.float64) if eps else x.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(t / (1 - t))   # NaN outside [0, 1], where the quotient is negative
    return out.astype(x.dtype, copy=False)


def _logit_grad(x, d, k):
    """1 / (x (1 - x)); outside [eps, 1 - eps] 0 (the clip is flat there), NaN outside [0, 1] with eps 0.
    The bounds themselves take the inner slope, as Paddle's kernel."""
    eps = k.attr("eps")
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = d / ((1 - x) * x)
    if eps:
        outside = (x < np.asarray(eps, x.dtype)) | (x > np.asarray(1.0 - eps, x.dtype))
        return np.where(outside, np.zeros((), slope.dtype), slope)
    return np.where((x < 0) | (x > 1), np.array(np.nan, slope.dtype), slope)


def _stanh_grad(x, d, k):
    a, b = k.attr("scale_a"), k.attr("scale_b")
    t = np.tanh(a * x)
    return d * (a * b) * (1 - t) * (1 + t)


_LN2, _LN10 = math.log(2), math.log(10)
_TWO_BY_SQRT_PI = 2 / math.sqrt(math.pi)

# rounding: flat, so zero grads; floor, ceil and round scale dOut by 0 (an infinite dOut gives NaN, as
# Paddle), trunc writes zeros (as Paddle's own trunc_grad kernel)
unary("floor", lambda x, k: np.floor(x), lambda d, _, k: d * 0, uses="Out@GRAD")
unary("ceil", lambda x, k: np.ceil(x), lambda d, _, k: d * 0, uses="Out@GRAD")
unary("round", _round, lambda d, _, k: d * 0, uses="Out@GRAD")
unary("trunc", lambda x, k: np.trunc(x), lambda d, _, k: np.zeros_like(d), uses="Out@GRAD")

unary("reciprocal", lambda x, k: 1 / x, lambda out, d, k: -d * out * out, uses="Out")
unary("expm1", lambda x, k: np.expm1(x), lambda out, d, k: d * (out + 1), uses="Out")
unary("log2", lambda x, k: np.log2(x), lambda x, d, k: d / (x * _LN2))
unary("log10", lambda x, k: np.log10(x), lambda x, d, k: d / (x * _LN10))
unary("log1p", lambda x, k: np.log1p(x), lambda x, d, k: d / (x + 1))
unary("tan", lambda x, k: np.tan(x), lambda x, d, k: d / np.cos(x) ** 2)
unary("asin", lambda x, k: np.arcsin(x), lambda x, d, k: d / np.sqrt((1 - x) * (1 + x)))
unary("acos", lambda x, k: np.arccos(x), lambda x, d, k: -d / np.sqrt((1 - x) * (1 + x)))
unary("atan", lambda x, k: np.arctan(x), lambda x, d, k: d / (1 + x * x))
unary("sinh", lambda x, k: np.sinh(x), lambda x, d, k: d * np.cosh(x))
unary("cosh", lambda x, k: np.cosh(x), lambda x, d, k: d * np.sinh(x))
unary("asinh", lambda x, k: np.arcsinh(x), lambda x, d, k: d / np.hypot(x, 1))
unary("acosh", lambda x, k: np.arccosh(x), lambda x, d, k: d / (np.sqrt(x - 1) * np.sqrt(x + 1)))
unary("atanh", lambda x, k: np.arctanh(x), lambda x, d, k: d / ((1 - x) * (1 + x)))
unary("erf", lambda x, k: erf(x), lambda x, d, k: d * _TWO_BY_SQRT_PI * np.exp(-x * x))
unary("logit", _logit, _logit_grad)
unary("stanh", lambda x, k: k.attr("scale_b") * np.tanh(k.attr("scale_a") * x), _stanh_grad)
