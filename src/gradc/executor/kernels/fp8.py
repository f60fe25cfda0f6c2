"""Kernels of gradc.ops.fp8: blockwise float8 quantization, dequantization, the weighted SwiGLU pair and the float8
GEMM, in float32 as the CUDA kernels compute (the formulas: gradc.ops.fp8's docstring)."""

from __future__ import annotations

import numpy as np

from ...bfloat16 import round_to_bfloat16
from ...float8 import E4M3FN
from . import kernel
from .moe import _dispatch

F32 = np.float32
FP8_MAX = F32(448.0)
POW2_INF_SCALE = F32(2.0 ** 127)   # the scale of a block whose 448 / amax overflows, with power-of-two scales
QUANT_INF_SCALE = F32(np.ldexp(255 / 128, 127))   # 0x1.FEp127 (bfloat16's largest): fp8_quant_blockwise's
BLOCK = 128


def scales(amax, epsilon: float, pow2: bool, inf_scale) -> np.ndarray:
    """The multiplying scale of each block (ScaleWrapper / ComputeScale) from its amax, float32."""
    amax = np.fmax(np.asarray(amax, F32), F32(epsilon))
    with np.errstate(divide="ignore", over="ignore"):
        scale = FP8_MAX / amax
    scale = np.where(np.isinf(scale), POW2_INF_SCALE if pow2 else F32(inf_scale), scale).astype(F32)
    if pow2:   # keep the float32 exponent: 2^floor(log2 scale)
        scale = (scale.view(np.uint32) & np.uint32(0x7F800000)).view(F32)
    return np.where(amax == 0, F32(1), scale).astype(F32)


def quantize_rows(x: np.ndarray, epsilon=0.0, pow2=True, inf_scale=QUANT_INF_SCALE, amax_round=None):
    """x [r, c] quantized in 1 x 128 blocks along its rows (a short last block): (float8 values, 1 / scale
    [r, ceil(c / 128)])."""
    rows, cols = x.shape
    blocks = -(-cols // BLOCK)
    padded = np.zeros((rows, blocks * BLOCK), F32)
    padded[:, :cols] = x
    tiles = padded.reshape(rows, blocks, BLOCK)
    amax = np.fmax.reduce(np.abs(tiles), axis=2) if cols else np.zeros((rows, 0), F32)
    scale = scales(amax if amax_round is None else amax_round(amax), epsilon, pow2, inf_scale)
    out = (tiles * scale[..., None]).reshape(rows, -1)[:, :cols]
    return E4M3FN.round(out), F32(1) / scale


def quantize_tiles(x: np.ndarray, epsilon: float, pow2: bool):
    """x [r, c] (multiples of 128) quantized in 128 x 128 tiles: (float8 values, 1 / scale [r / 128, c / 128])."""
    rows, cols = x.shape
    tiles = x.reshape(rows // BLOCK, BLOCK, cols // BLOCK, BLOCK)
    amax = np.fmax.reduce(np.fmax.reduce(np.abs(tiles), axis=3), axis=1)
    scale = scales(amax, epsilon, pow2, QUANT_INF_SCALE)
    return E4M3FN.round((tiles * scale[:, None, :, None]).reshape(rows, cols)), F32(1) / scale


def _flip(array: np.ndarray, flipped: bool) -> np.ndarray:
    return np.ascontiguousarray(array.T) if flipped else array


def pack_ue8m0(inverse: np.ndarray) -> np.ndarray:
    """Power-of-two dequantization factors [r, blocks] as their float32 exponent bytes, four to an int32 (little end
    first, zero bytes after the last block): int32 [r, ceil(blocks / 4)]."""
    rows, blocks = inverse.shape
    data = np.zeros((rows, -(-blocks // 4) * 4), np.uint8)
    data[:, :blocks] = (np.ascontiguousarray(inverse, F32).view(np.uint32) >> 23) & 0xFF
    return data.view("<i4").astype(np.int32)


@kernel("fp8_quant_blockwise")
def fp8_quant_blockwise(k):
    x, eps, packed = k.x("x").astype(F32), k.attr("epsilon"), k.attr("using_ue8m0_scale")
    flipped, rows = k.attr("output_scale_transpose"), k.attr("using_1x128_vec_quant")
    pow2 = packed or k.attr("using_pow2_scale")

    def stored(inverse):   # packed: a tile's factor on each of its 128 rows
        return pack_ue8m0(inverse if rows else np.repeat(inverse, BLOCK, axis=0)) if packed else inverse

    out, scale = quantize_rows(x, eps, pow2) if rows else quantize_tiles(x, eps, pow2)
    result = {"out": out, "scale": _flip(stored(scale), flipped)}
    if k.attr("input_transpose"):
        out_t, scale_t = quantize_rows(np.ascontiguousarray(x.T), eps, pow2) if rows else (out.T, scale.T)
        result.update(out_transposed=np.ascontiguousarray(out_t), scale_transposed=_flip(stored(scale_t), flipped))
        if k.attr("return_transpose_only"):   # Paddle leaves them unwritten
            result.update(out=np.zeros_like(out), scale=np.zeros_like(result["scale"]))
    return result


def ue8m0(packed: np.ndarray) -> np.ndarray:
    """int32 values each packing four ue8m0 exponent bytes (little end first), as the float32 2^(byte - 127)."""
    data = np.ascontiguousarray(packed, dtype="<i4").view(np.uint8).astype(np.uint32)
    return (data << 23).view(F32)


@kernel("fused_act_dequant")
def fused_act_dequant(k):
    x, scale = k.x("x").astype(F32), k.x("x_scale")
    rows, cols = x.shape
    blocks = -(-cols // BLOCK)
    flat = ue8m0(scale) if scale.dtype == np.int32 else scale.astype(F32).reshape(-1)
    per_block = flat[:rows * blocks].reshape(rows, blocks)
    return {"out": x * np.repeat(per_block, BLOCK, axis=1)[:, :cols]}


def _silu(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return x * (F32(1) / (F32(1) + np.exp(-x)))


@kernel("fused_weighted_swiglu_act_quant")
def fused_weighted_swiglu_act_quant(k):
    x = k.x("x").astype(F32)
    x = x.reshape(-1, x.shape[-1])
    half = x.shape[1] // 2
    act = _silu(x[:, :half]) * x[:, half:]
    if k.optional("prob") is not None:
        act = act * k.x("prob").astype(F32).reshape(-1)[:, None]
    # the kernel without 8-wide vectors keeps each block's amax in bfloat16
    rounding = round_to_bfloat16 if x.shape[1] % 8 else None
    out, inverse = quantize_rows(act, 0.0, k.attr("using_pow2_scaling"), np.finfo(F32).max, rounding)
    return {"out": out, "scale": inverse}


@kernel("fused_swiglu_weighted_bwd")
def fused_swiglu_weighted_bwd(k):
    o1, do2 = k.x("o1").astype(F32), k.x("do2_s").astype(F32)
    probs = k.x("unzipped_probs")
    half = o1.shape[-1] // 2
    x1, x2 = o1[..., :half], o1[..., half:]
    prob = probs.astype(F32).reshape(*o1.shape[:-1], 1)
    with np.errstate(over="ignore"):
        sig = F32(1) / (F32(1) + np.exp(-x1))
    silu = sig * x1
    o2 = silu * x2
    grad = do2 * prob
    do1 = np.concatenate([grad * (x2 * (sig * (F32(1) + x1 - silu))), grad * silu], axis=-1)
    probs_grad = np.sum(do2.astype(np.float64) * o2, axis=-1).astype(F32).reshape(probs.shape)
    return {"do1": do1, "probs_grad": probs_grad, "o2_s": o2 * prob}


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


@kernel("fp8_fp8_half_gemm_fused")
def fp8_fp8_half_gemm_fused(k):
    x, y = k.x("x").astype(np.float64), k.x("y").astype(np.float64)
    if k.attr("transpose_x"):
        x = np.swapaxes(x, -1, -2)
    if k.attr("transpose_y"):
        y = np.swapaxes(y, -1, -2)
    out = F32(k.attr("scale")) * np.matmul(x, y)
    if k.optional("bias") is not None:
        out = out + k.x("bias").astype(np.float64)
    act = k.attr("activation_type")
    out = np.maximum(out, 0) if act == "relu" else _gelu_tanh(out) if act == "gelu" else out
    # float32 as cuBLASLt accumulates, then rounded to the output type (bfloat16 by the store)
    return {"out": out.astype(F32).astype(np.float16 if k.attr("output_dtype") == "float16" else F32)}


@kernel("moe_gate_dispatch_and_quant")
def moe_gate_dispatch_and_quant(k):
    routed = _dispatch(k, k.attr("use_pad"))
    y = routed.pop("y").astype(F32)
    out, inverse = quantize_rows(y, 0.0, k.attr("use_pow2_scale"))
    landed = np.zeros(y.shape[0], bool)
    landed[routed["scatter_index"][routed["combine_weights"].T > 0]] = True
    out[~landed], inverse[~landed] = 0, 1   # rows nothing lands in: zeros, and scale 1 (Paddle's fill)
    return {**routed, "out_fp8": out, "scale": inverse, "combine_weights": routed["combine_weights"].astype(F32)}
