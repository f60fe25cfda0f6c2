"""float8 values (FP8_E4M3FN, FP8_E5M2), which numpy has no type for. As with bfloat16 (gradc.bfloat16), gradc's
executor keeps a float8 var's value as a float32 array whose every element is a number of the var's format (float32
holds each exactly): kernels compute in float32, and each result written to a var the program declares float8 is
rounded to its format, to nearest, ties to even, subnormals kept, -0 kept.

Out of range, gradc follows CUDA's conversion (``__nv_fp8_e4m3(float)``, ``__NV_SATFINITE``), which Paddle's GPU
kernels use: a finite value or an inf beyond the largest finite number saturates to it (+-448 in e4m3fn, +-57344 in
e5m2) and NaN stays NaN. Paddle 3.3.1's CPU conversion (phi::dtype::float8_e4m3fn(float)) agrees everywhere but
three ranges, where it is wrong (docs/float8.md): e4m3fn 464 < |x| < 480 gives NaN while |x| >= 480 gives 448, a NaN
gives +-448, and e5m2 61440 <= |x| < 65536 gives inf while |x| >= 65536 gives 57344.

Paddle hands float8 tensors to numpy as int8 arrays of their bits (``Tensor.numpy()``, paddle.save) and writes them
one byte a value in a .pdiparams file (data type 32 / 33); ``from_bits`` and ``to_bits`` convert.
"""

from __future__ import annotations

import numpy as np

from .ir import VarType

STORAGE = np.dtype(np.float32)   # the numpy dtype of a float8 var's values in the executor
FORMATS = {VarType.FP8_E4M3FN: "float8_e4m3fn", VarType.FP8_E5M2: "float8_e5m2"}


class _Format:
    """One float8 format's bit layout: ``mantissa`` bits, exponent ``bias``, its largest finite bit pattern, its
    NaN's, and whether the all-ones exponent is inf/NaN (e5m2, IEEE-like) or ordinary numbers (e4m3fn)."""

    def __init__(self, mantissa: int, bias: int, max_bits: int, nan_bits: int, ieee: bool):
        self.mantissa, self.bias, self.max_bits, self.nan_bits = mantissa, bias, max_bits, nan_bits
        codes = np.arange(256, dtype=np.uint32)
        exponent, fraction = (codes >> mantissa) & ((1 << (7 - mantissa)) - 1), codes & ((1 << mantissa) - 1)
        magnitude = np.where(exponent == 0, np.ldexp(fraction.astype(np.float64), 1 - bias - mantissa),
                             np.ldexp((fraction + (1 << mantissa)).astype(np.float64),
                                      exponent.astype(np.int64) - bias - mantissa))
        top = exponent == (1 << (7 - mantissa)) - 1
        if ieee:
            magnitude = np.where(top, np.where(fraction == 0, np.inf, np.nan), magnitude)
        else:
            magnitude = np.where((codes & 0x7F) == 0x7F, np.nan, magnitude)
        self.values = np.where(codes & 0x80, -magnitude, magnitude).astype(np.float32)   # bit pattern -> value
        self.max_finite = float(self.values[max_bits])
        self.min_normal_bits = np.uint32((127 - bias + 1) << 23)   # float32 bits of the smallest normal number

    def bits(self, values) -> np.ndarray:
        """float values rounded to the format (see the module docstring), as uint8 bit patterns."""
        word = np.asarray(values, dtype=np.float32).view(np.uint32)
        sign = ((word >> 24) & 0x80).astype(np.uint8)
        mag = word & np.uint32(0x7FFFFFFF)
        drop = 23 - self.mantissa
        # normals: rebias the exponent, then round the dropped bits to nearest, ties to the even kept bit
        rebias = np.uint32(((self.bias - 127) << 23) % (1 << 32))
        odd = (mag >> drop) & 1
        normal = ((mag + rebias + np.uint32((1 << (drop - 1)) - 1) + odd) >> drop).astype(np.uint32)
        # subnormals: adding 2^k whose float32 ulp is the smallest subnormal rounds to a multiple of it (to even)
        magic = np.float32(np.ldexp(1.0, 24 - self.bias - self.mantissa))
        sub = ((mag.view(np.float32) + magic).view(np.uint32) - magic.view(np.uint32)).astype(np.uint32)
        result = np.where(mag < self.min_normal_bits, sub, normal)
        result = np.where(result > self.max_bits, self.max_bits, result)   # saturate, inf included
        result = np.where(mag > np.uint32(0x7F800000), self.nan_bits, result)
        return result.astype(np.uint8) | sign

    def round(self, values) -> np.ndarray:
        """float values rounded to the format, as float32."""
        return self.values[self.bits(values)]


E4M3FN = _Format(mantissa=3, bias=7, max_bits=0x7E, nan_bits=0x7F, ieee=False)
E5M2 = _Format(mantissa=2, bias=15, max_bits=0x7B, nan_bits=0x7F, ieee=True)
_BY_CODE = {VarType.FP8_E4M3FN: E4M3FN, VarType.FP8_E5M2: E5M2}


class Float8Spec:
    """The declared dtype of an executor write spec for a float8 var: results are rounded, not cast."""

    def __init__(self, code: int):
        self.code, self.format = code, _BY_CODE[code]

    def round(self, values) -> np.ndarray:
        return self.format.round(values)

    def __repr__(self) -> str:
        return FORMATS[self.code]


SPECS = {code: Float8Spec(code) for code in FORMATS}


def round_to_float8(values, code: int) -> np.ndarray:
    """float values rounded to the float8 format of VarType ``code``, as float32."""
    return _BY_CODE[code].round(values)


def to_bits(values, code: int) -> np.ndarray:
    """float values rounded to the float8 format of VarType ``code``, as uint8 bit patterns."""
    return _BY_CODE[code].bits(values)


def from_bits(bits, code: int) -> np.ndarray:
    """float8 bit patterns (uint8, or int8 as Paddle's numpy arrays hold them) of format ``code``, as float32."""
    return _BY_CODE[code].values[np.asarray(bits).view(np.uint8) if np.asarray(bits).dtype == np.int8
                                 else np.asarray(bits, dtype=np.uint8)]


def as_float8(array: np.ndarray, code: int) -> np.ndarray:
    """An array given for a float8 var, as the executor holds it: uint8 / int8 arrays are Paddle's float8 bits, any
    other numbers are rounded to the format."""
    array = np.asarray(array)
    return from_bits(array, code) if array.dtype in (np.uint8, np.int8) else round_to_float8(array, code)


def max_finite(code: int) -> float:
    """The largest finite number of the float8 format of VarType ``code`` (448, 57344)."""
    return _BY_CODE[code].max_finite
