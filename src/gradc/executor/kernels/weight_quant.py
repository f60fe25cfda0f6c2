"""Kernels of gradc.ops.weight_quant: weight_quantize (Paddle's CPU kernel's formula and byte layouts),
weight_dequantize, weight_only_linear and llm_int8_linear (the GPU kernels' formulas on those layouts)."""

from __future__ import annotations

import numpy as np

from ...ops.weight_quant import BITS, is_turing_plus
from . import kernel


def _round_away(v: np.ndarray) -> np.ndarray:
    """C's round: halves away from zero."""
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def quantize(x: np.ndarray, bits: int, group_size: int, scale_dtype) -> tuple[np.ndarray, np.ndarray]:
    """(q [k, n] ints in [-bound, bound], scale [n] or [ceil(k / group_size), n] in scale_dtype): scale = max |x|
    over the column (or its group of rows) / bound, q = round(x / scale) clipped, in float32 as the kernel computes.
    A column of zeros divides 0 by 0: the kernel's clip turns that NaN into 127 (int8) or, through an int cast,
    -7 (int4)."""
    bound = np.float32(127 if bits == 8 else 7)
    w = x.astype(np.float32)
    if group_size == -1:
        scale = (np.abs(w).max(axis=0) / bound).astype(scale_dtype)
        spread = np.broadcast_to(scale.astype(np.float32), w.shape)
    else:
        groups = -(-w.shape[0] // group_size)
        padded = np.zeros((groups * group_size, w.shape[1]), np.float32)
        padded[:w.shape[0]] = np.abs(w)
        scale = (padded.reshape(groups, group_size, -1).max(axis=1) / bound).astype(scale_dtype)
        spread = np.repeat(scale.astype(np.float32), group_size, axis=0)[:w.shape[0]]
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = _round_away(w / spread)
    q = np.where(np.isnan(scaled), bound if bits == 8 else -bound, np.clip(scaled, -bound, bound))
    return q.astype(np.int8), scale


def _nibbles_to_bytes(values: np.ndarray) -> np.ndarray:
    """4-bit values (0..15 or signed), two per byte along the last dim, the first in the low nibble."""
    v = values.astype(np.int32) & 0xF
    return (v[..., 0::2] | (v[..., 1::2] << 4)).astype(np.uint8).view(np.int8)


def _bytes_to_nibbles(data: np.ndarray) -> np.ndarray:
    b = data.view(np.uint8).astype(np.int32)
    out = np.empty((*b.shape[:-1], b.shape[-1] * 2), np.int32)
    out[..., 0::2], out[..., 1::2] = b & 0xF, b >> 4
    return out


def _mma_rows(k: int, bits: int) -> np.ndarray:
    """permute_B_rows_for_mixed_gemm's row order: row base + t of the result is row base + src(t) of the input."""
    per_register, tile = 32 // bits, 8 * (16 // bits)
    t = np.arange(tile)
    source = 8 * ((t % per_register) // 2) + t % 2 + 2 * (t // per_register)
    return (np.arange(0, k, tile)[:, None] + source[None, :]).reshape(-1)


def _interleaved_columns(q_t: np.ndarray, bits: int) -> np.ndarray:
    """interleave_column_major_tensor on [n, k] values: each run of `interleave` (2 for int8, 4 for int4) columns
    becomes one row, taking 64 values of each in turn."""
    interleave = 2 if bits == 8 else 4
    n, k = q_t.shape
    return q_t.reshape(n // interleave, interleave, k // 64, 64).transpose(0, 2, 1, 3).reshape(n // interleave, -1)


def _biased_swizzle(values: np.ndarray, bits: int) -> np.ndarray:
    """add_bias_and_interleave: unsigned (+128 or +8) and reordered in each 32-bit register ([0 2 1 3] for int8,
    nibbles [0 2 4 6 1 3 5 7] for int4), as bytes."""
    if bits == 8:
        u = (values.reshape(-1).astype(np.int32) + 128).reshape(-1, 4)[:, [0, 2, 1, 3]]
        return u.astype(np.uint8).view(np.int8).reshape(-1)
    u = (values.reshape(-1).astype(np.int32) + 8).reshape(-1, 8)[:, [0, 2, 4, 6, 1, 3, 5, 7]]
    return _nibbles_to_bytes(u.reshape(-1))


def pack(q: np.ndarray, bits: int, arch: int, llm_int8: bool) -> np.ndarray:
    """weight_quantize's out from q [k, n]: llm.int8 the transpose; SM70 q row-major, biased and swizzled; SM75+
    rows permuted for the MMA, transposed, columns interleaved, biased and swizzled. Shape [n, k] ([n / 2, k])."""
    k, n = q.shape
    rows = n if bits == 8 else n // 2
    if llm_int8:
        return np.ascontiguousarray(q.T)
    if not is_turing_plus(arch):
        return _biased_swizzle(q, bits).reshape(rows, k)
    permuted = q[_mma_rows(k, bits)]
    return _biased_swizzle(_interleaved_columns(np.ascontiguousarray(permuted.T), bits), bits).reshape(rows, k)


def unpack(data: np.ndarray, bits: int, arch: int, llm_int8: bool, k: int, n: int) -> np.ndarray:
    """pack's inverse: q [k, n] from the packed bytes."""
    if llm_int8:
        return data.T.astype(np.int32)
    if bits == 8:
        values = data.reshape(-1, 4).view(np.uint8).astype(np.int32)[:, [0, 2, 1, 3]].reshape(-1) - 128
    else:
        values = _bytes_to_nibbles(data.reshape(-1)).reshape(-1, 8)[:, [0, 4, 1, 5, 2, 6, 3, 7]].reshape(-1) - 8
    if not is_turing_plus(arch):
        return values.reshape(k, n)
    interleave = 2 if bits == 8 else 4
    q_t = values.reshape(n // interleave, k // 64, interleave, 64).transpose(0, 2, 1, 3).reshape(n, k)
    q = np.empty((k, n), np.int32)
    q[_mma_rows(k, bits)] = q_t.T
    return q


def dequantized(weight: np.ndarray, scale: np.ndarray, bits: int, arch: int, group_size: int) -> np.ndarray:
    """The float64 weight [k, n] a packed weight and its scale stand for."""
    n = scale.shape[-1]
    rows = weight.size * 8 // bits // n
    q = unpack(weight, bits, arch, False, rows, n).astype(np.float64)
    spread = scale.astype(np.float64) if group_size == -1 else np.repeat(scale.astype(np.float64), group_size, 0)[:rows]
    return q * spread


@kernel("weight_quantize")
def weight_quantize(k):
    x, algo = k.x("x"), k.attr("algo")
    bits = BITS[algo]
    q, scale = quantize(x, bits, k.attr("group_size"), np.float32 if algo == "llm.int8" else x.dtype)
    return {"out": pack(q, bits, k.attr("arch"), algo == "llm.int8"), "scale": scale}


@kernel("weight_dequantize")
def weight_dequantize(k):
    scale = k.x("scale")
    return {"out": dequantized(k.x("x"), scale, BITS[k.attr("algo")], 80, k.attr("group_size")).astype(scale.dtype)}


def _linear_weight(k) -> np.ndarray:
    bits = 8 if k.attr("weight_dtype") == "int8" else 4
    return dequantized(k.x("weight"), k.x("weight_scale"), bits, k.attr("arch"), k.attr("group_size"))


@kernel("weight_only_linear")
def weight_only_linear(k):
    x, bias = k.x("x"), k.optional("bias")
    out = x.astype(np.float64) @ _linear_weight(k)
    return {"out": (out if bias is None else out + bias).astype(x.dtype)}


@kernel("weight_only_linear_grad", shape_only=("x",))
def weight_only_linear_grad(k):
    dout = k.x("out@GRAD")
    return k.grads({"x@GRAD": lambda: (dout.astype(np.float64) @ _linear_weight(k).T).astype(dout.dtype)})


@kernel("llm_int8_linear")
def llm_int8_linear(k):
    x, bias, threshold = k.x("x"), k.optional("bias"), k.attr("threshold")
    q, scale = k.x("weight").astype(np.float64), k.x("weight_scale").astype(np.float64)
    rows = x.reshape(-1, x.shape[-1]).astype(np.float64)
    inliers = np.abs(rows) <= threshold
    outliers = ~inliers.all(axis=0)   # a column with an outlier in any row goes through the float product
    ranges = np.where(inliers, np.abs(rows), 0).max(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        qx = np.where(ranges > 0, np.clip(_round_away(rows * 127 / ranges), -127, 127), 0)
    qx[:, outliers] = 0
    out = rows[:, outliers] @ (q[:, outliers] * scale[:, None]).T + (qx @ q.T) * ranges * scale / 127
    out = out if bias is None else out + bias
    return {"out": out.reshape(*x.shape[:-1], -1).astype(x.dtype)}
