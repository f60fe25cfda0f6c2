"""Kernels of gradc.ops.onednn_quant: the oneDNN reorders of Paddle's quantize, dequantize and requantize, in
float32 arithmetic in the kernels' order, rounded half to even and saturated (bit for bit Paddle's CPU outputs)."""

from __future__ import annotations

import numpy as np

from ...bfloat16 import round_to_bfloat16
from ...ir import VarType
from ...ops.onednn_quant import quantize_dtype, quantize_shift
from . import kernel

RANGES = {VarType.INT8: (np.int8, -128, 127), VarType.UINT8: (np.uint8, 0, 255)}
NUMPY_TYPES = {np.dtype(np.int8): VarType.INT8, np.dtype(np.uint8): VarType.UINT8}


def saturated(values: np.ndarray, dtype: VarType) -> np.ndarray:
    """float32 values rounded to nearest (ties to even) and clipped to the int8 / uint8 range."""
    numpy_type, low, high = RANGES[dtype]
    return np.clip(np.rint(values), low, high).astype(numpy_type)


def _round_half_away(value: np.float32) -> int:
    """C's lround."""
    return int(np.sign(value) * np.floor(np.abs(value) + np.float32(0.5)))


@kernel("quantize")
def quantize(k):
    x, scale, shift = k.x("Input").astype(np.float32), np.float32(k.attr("Scale")), quantize_shift(k.attr("Shift"))
    dtype = quantize_dtype(k.attr("is_negative_input"), shift, k.attr("bfloat16"))
    scaled = x * scale
    if dtype == VarType.BF16:
        return {"Output": round_to_bfloat16(scaled)}
    return {"Output": saturated(scaled + np.float32(shift), dtype)}


@kernel("dequantize")
def dequantize(k):
    x = k.x("Input")
    shift = np.float32(quantize_shift(k.attr("Shift")))
    return {"Output": (x.astype(np.float32) - shift) * (np.float32(1) / np.float32(k.attr("Scale")))}


@kernel("requantize")
def requantize(k):
    x = k.x("Input")
    ratio = np.float32(k.attr("Scale_in")) / np.float32(k.attr("Scale_out"))
    shift_in, shift_out = np.float32(k.attr("Shift_in")), np.float32(k.attr("Shift_out"))
    shifted = shift_in != 0 or shift_out != 0
    inverse = np.float32(1) / ratio
    zero = min(255, max(0, _round_half_away(shift_out - inverse * shift_in))) if shifted else 0
    dtype = VarType.UINT8 if shifted else NUMPY_TYPES[x.dtype]
    return {"Output": saturated(x.astype(np.float32) * inverse + np.float32(zero), dtype)}
