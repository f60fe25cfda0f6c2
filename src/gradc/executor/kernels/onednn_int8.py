"""The arithmetic of oneDNN's int8 compute kernels, as Paddle's int8 passes use them (cpu_quantize_pass:
fused_conv2d, fc and pool2d on the int8 / uint8 output of a quantize op). Shared by the fused_conv2d, fc and pool2d
kernels; no op of its own.

Weights stay float32 in the program: the kernel quantizes them per output channel, round-half-even(W * Scale_weights
* adjust) saturated to int8, accumulates in int32 (exact), and scales back in float32: acc * (1 / Scale_in) *
(1 / Scale_weights) / adjust, then adds Bias (float32, unscaled) and applies the post-ops.

What oneDNN computes depends on the CPU (GRADC_ONEDNN_ISA):
- ``vnni`` (default; CPUs with AVX512-VNNI / AVX-VNNI / AMX): exact int32 accumulation, adjust 1.
- ``avx2`` (AVX2 or AVX-512 without VNNI, e.g. an AMD EPYC before Zen 4): u8 x s8 products are summed in pairs in
  int16 (vpmaddubsw), which saturates. An int8 input is shifted by +128 to uint8 and compensated. The convolution
  guards against the saturation by quantizing an int8 input's weights at half scale (adjust 0.5, so half the
  weight precision); the inner product (fc) does not, so its pairs saturate at 32767.
"""

from __future__ import annotations

import os

import numpy as np

from ...ir import VarType
from .onednn_quant import NUMPY_TYPES, saturated

ISAS = ("vnni", "avx2")


def isa() -> str:
    name = os.environ.get("GRADC_ONEDNN_ISA", "vnni")
    if name not in ISAS:
        raise ValueError(f"GRADC_ONEDNN_ISA is {name!r}, not one of {list(ISAS)}")
    return name


def quantized(values: np.ndarray) -> bool:
    """Whether ``values`` are a quantize op's int8 / uint8 output, which the int8 kernels take."""
    return values.dtype in NUMPY_TYPES


def weight_adjust(source: np.ndarray) -> float:
    """The convolution's weight-scale adjustment: 0.5 for an int8 input on a CPU without VNNI, else 1."""
    return 0.5 if isa() == "avx2" and source.dtype == np.int8 else 1.0


def quantized_weights(w: np.ndarray, scales: np.ndarray, axis: int, adjust: float = 1.0) -> np.ndarray:
    """round-half-even(W * scale * adjust) in float32, saturated to int8, as the weights reorder writes it; one
    scale per index of ``axis`` (or one for all), returned as float64 (exact for the int32 accumulation)."""
    per_channel = np.float32(adjust) * scales.astype(np.float32)
    if per_channel.size > 1:
        shape = [1] * w.ndim
        shape[axis] = -1
        per_channel = per_channel.reshape(shape)
    return np.clip(np.rint(w.astype(np.float32) * per_channel), -128, 127).astype(np.float64)


def weight_scales(attrs_scales, channels: int) -> np.ndarray:
    """Scale_weights as float32: one for all output channels or one each."""
    scales = np.asarray(attrs_scales, np.float32)
    if scales.size not in (1, channels):
        raise ValueError(f"Scale_weights has {scales.size} values for {channels} output channels (1 or one each)")
    return scales


def dequantized(acc: np.ndarray, scale_in: float, scales: np.ndarray, axis: int, adjust: float = 1.0) -> np.ndarray:
    """acc (exact integers) * (1 / Scale_in) * (1 / Scale_weights) / adjust in float32: oneDNN's src and weight
    scales, the reciprocals the Paddle kernel passes."""
    combined = np.float32(1) / np.float32(scale_in) * (np.float32(1) / scales.astype(np.float32))
    combined = combined * np.float32(1 / adjust)
    if combined.size > 1:
        shape = [1] * acc.ndim
        shape[axis] = -1
        combined = combined.reshape(shape)
    return acc.astype(np.float32) * combined


def inner_product(x: np.ndarray, wq: np.ndarray) -> np.ndarray:
    """x [M, K] (int8 / uint8) times wq [K, N] (int8 values): the int32 accumulation, with avx2's saturating pairs."""
    if isa() != "avx2":
        return x.astype(np.float64) @ wq
    shift = 128 if x.dtype == np.int8 else 0
    u = x.astype(np.int64) + shift
    w = wq.astype(np.int64)
    if u.shape[1] % 2:   # the odd last column pairs with a zero
        u, w = np.pad(u, ((0, 0), (0, 1))), np.pad(w, ((0, 1), (0, 0)))
    pairs = u[:, 0::2, None] * w[None, 0::2] + u[:, 1::2, None] * w[None, 1::2]
    return (np.clip(pairs, -32768, 32767).sum(1) - shift * w.sum(0)).astype(np.float64)


def matmul_scaled(acc: np.ndarray, scale_x: float, alpha: float, scale_y: float) -> np.ndarray:
    """The int8 matmul's src and weight scales, 1 / Scale_x and alpha / Scale_y, multiplied together first (as
    oneDNN does: other orders differ in the last bit) and then into acc, in float32."""
    combined = (np.float32(1) / np.float32(scale_x)) * (np.float32(alpha) / np.float32(scale_y))
    return acc.astype(np.float32) * combined


def dequantized_residual(residual: np.ndarray, scale: float) -> np.ndarray:
    """An int8 / uint8 ResidualData at its scale (Scale_in_eltwise; 0 means none): residual / scale in float32."""
    if not quantized(residual) or scale == 0:
        return residual.astype(np.float32, copy=False)
    return residual.astype(np.float32) * (np.float32(1) / np.float32(scale))


def requantized(out: np.ndarray, scale_out: float, activation: str) -> np.ndarray:
    """An int8 op's int8 output: round(out * Scale_out) saturated, uint8 after relu / relu6, else int8."""
    dtype = VarType.UINT8 if activation in ("relu", "relu6") else VarType.INT8
    return saturated(out * np.float32(scale_out), dtype)
