"""The C math library's functions, called as Paddle's CPU kernels call them: glibc's logf, log, log1pf, powf, lgamma
and erf are not correctly rounded, and numpy's own log (SIMD) differs from glibc's in about 0.5% of doubles and 22% of
floats, so a random draw that passes through them equals Paddle's only when the same functions compute it. Through
ctypes (about 3 million calls a second). Another system's C library gives its own (Paddle's numbers are glibc's);
without one, numpy's and Python's, an ulp from Paddle's now and then."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math

import numpy as np

_FLOAT_FUNCTIONS, _DOUBLE_FUNCTIONS = ("logf", "log1pf", "powf"), ("lgamma", "erf")


@functools.cache
def _library():
    try:
        library = ctypes.CDLL("libm.so.6")
    except OSError:   # not glibc's name: ask the system (find_library runs a subprocess, so only then)
        try:
            library = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so")
        except OSError:
            return None
    try:
        functions = {name: getattr(library, name) for name in _FLOAT_FUNCTIONS + _DOUBLE_FUNCTIONS}
    except AttributeError:
        return None
    for name, function in functions.items():
        kind = ctypes.c_float if name in _FLOAT_FUNCTIONS else ctypes.c_double
        function.restype, function.argtypes = kind, [kind] * (2 if name == "powf" else 1)
    return functions


def log(values: np.ndarray) -> np.ndarray:
    """log of each value in its own float: logf for float32, log for float64 (Python's math.log, called by map:
    a frame per value costs as much as the log)."""
    values = np.asarray(values)
    flat = values.ravel()
    out = np.where(flat == 0, -np.inf, np.nan).astype(values.dtype)   # C's log at the edges, where Python's raises
    positive = flat > 0
    library = _library()
    log_one = library["logf"] if values.dtype == np.float32 and library is not None else math.log
    out[positive] = list(map(log_one, flat[positive].tolist()))   # without logf: math.log rounded to float32 here
    return out.reshape(values.shape)


def _log_or_limit(function, value: float) -> float:
    """C's log at the edges, where Python's raises: -inf at 0, NaN below."""
    if value > 0:
        return function(value)
    return -math.inf if value == 0 else math.nan


def scalar_functions(dtype):
    """(log, log1p, pow) of one C float or double value, as Python floats (Python's math.log and math.pow are C's)."""
    library = _library()
    if np.dtype(dtype) == np.float64:
        return (lambda v: _log_or_limit(math.log, v)), math.log1p, math.pow
    if library is None:
        rounded = np.float32
        return ((lambda v: float(rounded(_log_or_limit(math.log, v)))), (lambda v: float(rounded(math.log1p(v)))),
                (lambda a, b: float(rounded(math.pow(a, b)))))
    return library["logf"], library["log1pf"], library["powf"]


def lgamma(value: float) -> float:
    library = _library()
    return library["lgamma"](value) if library is not None else math.lgamma(value)


def erf(value: float) -> float:
    library = _library()
    return library["erf"](value) if library is not None else math.erf(value)
