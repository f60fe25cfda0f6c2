"""Kernels of gradc.ops.quant. They compute in X's dtype with Paddle's order of operations (bin_cnt / s first,
then times X; the dequantized q * s, then over bin_cnt), so a float32 program rounds the same elements up and down
as Paddle's."""

from __future__ import annotations

from functools import partial

import numpy as np

from ...float8 import round_to_float8
from ...limits import check_shape
from ...ops.quant import FLOAT8_QMAX
from . import kernel


def bin_count(bits: int) -> int:
    return 2 ** (bits - 1) - 1


def inverse(scale: np.ndarray) -> np.ndarray:
    """1 / scale, with Paddle's guard for a zero scale (an all-zero X): 1 / (scale + 1e-6) below 1e-30."""
    tiny = scale <= 1e-30
    return (1 / np.where(tiny, scale + scale.dtype.type(1e-6), scale)).astype(scale.dtype)


def round_half_away(v: np.ndarray) -> np.ndarray:
    """std::round: halves go away from zero (numpy's rint goes to even)."""
    whole = np.trunc(v)
    return whole + np.where(np.abs(v - whole) >= 0.5, np.sign(v), 0).astype(v.dtype)


def clip(x: np.ndarray, low, high) -> np.ndarray:
    """Paddle's ClipFunctor, x < low ? low : x > high ? high : x: for a negative scale (low > high) it differs from
    np.clip, which gives high everywhere."""
    return np.where(x < low, low, np.where(x > high, high, x)).astype(x.dtype)


def quantize(x: np.ndarray, scale: np.ndarray, bins: int, round_type: int) -> np.ndarray:
    """q(X) for a scale broadcast against X (one, or one per channel); round_type 0 with bin_cnt 448 or 57344 rounds
    to float8_e4m3fn or e5m2 (saturating) and clips to [-bin_cnt, bin_cnt]."""
    factor = x.dtype.type(bins) * inverse(scale)
    if round_type == 0 and bins in FLOAT8_QMAX:
        rounded = round_to_float8(factor * x, FLOAT8_QMAX[bins]).astype(x.dtype)
        return np.clip(rounded, -bins, bins).astype(x.dtype)
    if round_type == 0:
        return np.clip(np.rint(factor * x), -bins - 1, bins).astype(x.dtype)
    return round_half_away(factor * clip(x, -scale, scale))


def dequantize(q: np.ndarray, scale: np.ndarray, bins: int) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):   # bit_length 1 (bin_cnt 0) gives NaN, as in Paddle
        return (q * scale / q.dtype.type(bins)).astype(q.dtype)


def abs_max(x: np.ndarray) -> np.ndarray:
    """A NaN anywhere makes it NaN (Paddle's std::max_element keeps a NaN only when it comes first)."""
    return np.abs(x).max(initial=0).astype(x.dtype).reshape(1)


def channel_scales(x: np.ndarray, axis: int) -> np.ndarray:
    """The abs max of each slice along ``axis`` (0 or 1)."""
    others = tuple(d for d in range(x.ndim) if d != axis)
    return np.abs(x).max(axis=others, initial=0).astype(x.dtype)


def along(scales: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """Channel scales shaped to broadcast along ``axis`` of an ndim-dim tensor."""
    return scales.reshape([-1 if d == axis else 1 for d in range(ndim)])


def _checked_channels(k, x: np.ndarray, scales: np.ndarray, axis: int) -> np.ndarray:
    if not 0 <= axis < x.ndim or scales.size != x.shape[axis]:
        raise ValueError(f"{k.op.type} needs one scale per slice of X {list(x.shape)} along dim {axis}, got "
                         f"{scales.size} scales")
    return along(scales.reshape(-1), axis, x.ndim)


def moving_average(k, current: np.ndarray, rate: float) -> dict:
    """state = rate * state + 1, accum = rate * accum + current, OutScale = accum / state."""
    accum, state = k.optional("InAccum"), k.optional("InState")
    if accum is None or state is None:
        raise ValueError(f"{k.op.type} (training) needs InAccum and InState")
    rate = current.dtype.type(rate)
    state = (rate * state.reshape(1).astype(current.dtype) + 1).astype(current.dtype)
    accum = (rate * accum.reshape(1).astype(current.dtype) + current).astype(current.dtype)
    return {"OutState": state, "OutAccum": accum, "OutScale": accum / state}


def _quantized(k, x: np.ndarray, scale: np.ndarray, dequantized: bool) -> np.ndarray:
    """q(X), or for a quantize-dequantize op q(X) * s / bin_cnt."""
    bins = bin_count(k.attr("bit_length"))
    q = quantize(x, scale, bins, k.attr("round_type"))
    return dequantize(q, scale, bins) if dequantized else q


def _abs_max(k, dequantized: bool) -> dict:
    x = k.x("X")
    scale = abs_max(x)
    return {"Out": _quantized(k, x, scale, dequantized), "OutScale": scale}


def _channel_wise(k, dequantized: bool, scales: np.ndarray | None = None) -> dict:
    x, axis = k.x("X"), k.attr("quant_axis")
    scales = channel_scales(x, axis) if scales is None else scales
    return {"Out": _quantized(k, x, _checked_channels(k, x, scales, axis), dequantized), "OutScale": scales}


def _given_scale(k, slot: str) -> np.ndarray:
    scale = k.x(slot)
    if scale.size != 1:
        raise ValueError(f"{k.op.type} needs one scale in {slot}, got shape {list(scale.shape)}")
    return scale.reshape(1).astype(k.x("X").dtype)


def _moving_average_abs_max(k, dequantized: bool) -> dict:
    x = k.x("X")
    results = {} if k.attr("is_test") else moving_average(k, abs_max(x), k.attr("moving_rate"))
    scale = results.get("OutScale", _given_scale(k, "InScale"))
    return {"Out": _quantized(k, x, scale, dequantized), **results}


# each scale's quantize op writes q(X), its quantize-dequantize op q(X) * s / bin_cnt
kernel("fake_quantize_abs_max")(partial(_abs_max, dequantized=False))
kernel("fake_quantize_dequantize_abs_max")(partial(_abs_max, dequantized=True))
kernel("fake_channel_wise_quantize_dequantize_abs_max")(partial(_channel_wise, dequantized=True))
kernel("fake_quantize_moving_average_abs_max")(partial(_moving_average_abs_max, dequantized=False))
kernel("fake_quantize_dequantize_moving_average_abs_max")(partial(_moving_average_abs_max, dequantized=True))


@kernel("fake_channel_wise_quantize_abs_max")
def fake_channel_wise_quantize_abs_max(k):
    """With is_test, the scales are OutScale's value (Paddle's program feeds the trained ones into it)."""
    if not k.attr("is_test"):
        return _channel_wise(k, dequantized=False)
    name = k.out_names("OutScale")[0]
    scales = k.scope.find(name)
    if scales is None:
        raise ValueError(f"fake_channel_wise_quantize_abs_max (is_test) quantizes with OutScale's value, but var "
                         f"'{name}' has none")
    return {"Out": _channel_wise(k, False, np.asarray(scales))["Out"]}


def _step_count(k) -> int:
    """Iter's value. Paddle's kernel takes it modulo window_size in C++, where a negative one indexes before the
    window: refused."""
    step = k.optional("Iter")
    if step is None or step.size != 1 or step.dtype.kind not in "iu" or step.reshape(-1)[0] < 0:
        got = "none" if step is None else f"{step.dtype} {step.reshape(-1)[:3].tolist()}"
        raise ValueError(f"fake_quantize_range_abs_max (training) needs Iter to be one step count >= 0, got {got}")
    return int(step.reshape(-1)[0])


@kernel("fake_quantize_range_abs_max")
def fake_quantize_range_abs_max(k):
    """Training keeps the last window_size abs maxes in OutScales (its value from the last run, zeros at first),
    the one of step Iter at Iter % window_size. The scale is InScale, raised to the new abs max, or, when the
    abs max that dropped out of the window was the scale, the largest left (of the first Iter entries, at least
    the new one)."""
    x, last = k.x("X"), _given_scale(k, "InScale")
    if k.attr("is_test"):
        return {"Out": _quantized(k, x, last, dequantized=False)}
    window, step = k.attr("window_size"), _step_count(k)
    if not k.out_names("OutScales"):   # a loaded program's; gradc's builder declares it
        raise ValueError("fake_quantize_range_abs_max (training) keeps the window of abs maxes in OutScales, which "
                         "the op lacks")
    kept = k.scope.find(k.out_names("OutScales")[0])
    scales = np.zeros(check_shape([window], x.dtype, "OutScales (window_size)"), x.dtype) \
        if kept is None or np.size(kept) != window else np.array(kept, x.dtype).reshape(window)
    current, slot = abs_max(x), step % window
    removed, scales[slot] = scales[slot], current[0]
    scale = last.copy()
    if last[0] < current[0]:
        scale = current
    elif abs(removed - last[0]) < 1e-6:
        scale = abs_max(scales[:max(min(step, window), 1)])
    return {"Out": _quantized(k, x, scale, dequantized=False), "OutScale": scale, "OutScales": scales}


@kernel("moving_average_abs_max_scale")
def moving_average_abs_max_scale(k):
    """Out is X; training updates the moving average of X's abs max."""
    x = k.x("X")
    results = {"Out": x.copy()} if k.wants("Out") else {}
    return results if k.attr("is_test") else {**results, **moving_average(k, abs_max(x), k.attr("moving_rate"))}


@kernel("fake_quantize_dequantize_abs_max_grad", "fake_channel_wise_quantize_dequantize_abs_max_grad",
        "fake_quantize_dequantize_moving_average_abs_max_grad", "straight_through_estimator_grad")
def straight_through(k):
    return {"X@GRAD": k.x("Out@GRAD").copy()}


@kernel("fake_dequantize_max_abs")
def fake_dequantize_max_abs(k):
    x = k.x("X")
    return {"Out": (x * _given_scale(k, "Scale") / x.dtype.type(k.attr("max_range"))).astype(x.dtype)}


@kernel("fake_channel_wise_dequantize_max_abs")
def fake_channel_wise_dequantize_max_abs(k):
    """X * the weight scales [* the activation scale] / the bin counts' product (see the op's inference)."""
    x, scales, bits = k.x("X"), k.xs("Scales"), k.attr("quant_bits")
    bins = x.dtype.type(np.prod([bin_count(b) for b in bits[:len(scales)]]))
    if len(scales) == 1:
        return {"Out": (x * _checked_channels(k, x, scales[0], k.attr("quant_axis")) / bins).astype(x.dtype)}
    if scales[1].size != 1:
        raise ValueError(f"fake_channel_wise_dequantize_max_abs needs one activation scale, got Scales[1] of shape "
                         f"{list(scales[1].shape)}")
    weight = _checked_channels(k, x, scales[0], k.attr("x_num_col_dims"))
    return {"Out": (x * weight * scales[1].reshape(-1)[0] / bins).astype(x.dtype)}


def _linear_scale(k, x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    axis = k.attr("quant_axis")
    if axis < 0:
        if scale.size != 1:
            raise ValueError(f"{k.op.type} with quant_axis {axis} needs one scale, got shape {list(scale.shape)}")
        return scale.reshape(1)
    return _checked_channels(k, x, scale, axis)


@kernel("quantize_linear")
def quantize_linear(k):
    """Training (is_test false) takes the scale from X: a moving average (rate 0.9, whatever moving_rate says, as
    Paddle's kernel) per tensor, the abs max per channel; only_observer passes X through unquantized."""
    x, qmax, round_type, axis = k.x("X"), k.attr("qmax"), k.attr("round_type"), k.attr("quant_axis")
    results = {}
    if not k.attr("is_test"):
        results = moving_average(k, abs_max(x), 0.9) if axis < 0 else {"OutScale": channel_scales(x, axis)}
    scale = _linear_scale(k, x, results.get("OutScale", k.x("Scale")).astype(x.dtype))
    y = x.copy() if k.attr("only_observer") else quantize(x, scale, qmax, round_type)
    return {"Y": y, **results}


@kernel("dequantize_linear")
def dequantize_linear(k):
    """Y = X * Scale / qmax in Scale's dtype; only_observer copies X."""
    x, scale = k.x("X"), k.x("Scale")
    if k.attr("only_observer"):
        return {"Y": x.copy()}
    values = x.astype(scale.dtype)
    return {"Y": (values * _linear_scale(k, values, scale) / scale.dtype.type(k.attr("qmax"))).astype(scale.dtype)}


@kernel("dequantize_abs_max")
def dequantize_abs_max(k):
    """Out = X * Scale / max_range in float32 (an int8 or int16 X, as quant_embedding stores a table)."""
    x, scale = k.x("X").astype(np.float32), k.x("Scale").astype(np.float32).reshape(1)
    return {"Out": x * scale / np.float32(k.attr("max_range"))}


@kernel("dequantize_log")
def dequantize_log(k):
    """Out = Dict[X] for X >= 0, -Dict[X + 128] for X < 0, in float32."""
    x, table = k.x("X").astype(np.int64), k.x("Dict").astype(np.float32)
    index = np.where(x < 0, x + 128, x)
    if index.size and index.max() >= table.size:
        raise ValueError(f"dequantize_log: code {int(x.flat[index.argmax()])} indexes past Dict's {table.size} "
                         f"magnitudes")
    return {"Out": np.where(x < 0, -table[index], table[index])}
