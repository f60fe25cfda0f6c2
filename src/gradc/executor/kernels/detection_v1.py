"""Kernels of gradc.ops.detection_v1: affine_channel, shuffle_channel, add_position_encoding and their grads."""

from __future__ import annotations

import numpy as np

from . import kernel


def _channel_axis(k, x: np.ndarray) -> int:
    """Dim 1 for data_layout NCHW, else the last (Paddle's kernel reads any other layout as channel-last)."""
    return 1 if k.attr("data_layout") == "NCHW" else x.ndim - 1


def _per_channel(k, x: np.ndarray, value: np.ndarray, slot: str) -> np.ndarray:
    """A [C] input shaped to broadcast along X's channel dim."""
    axis = _channel_axis(k, x)
    if value.shape != (x.shape[axis],):
        raise ValueError(f"{slot} must be [C] = [{x.shape[axis]}] for X {list(x.shape)} "
                         f"(data_layout {k.attr('data_layout')}), got {list(value.shape)}")
    return value.reshape([-1 if d == axis else 1 for d in range(x.ndim)])


@kernel("affine_channel")
def affine_channel(k):
    x = k.x("X")
    return {"Out": (x * _per_channel(k, x, k.x("Scale"), "Scale") + _per_channel(k, x, k.x("Bias"), "Bias"))
            .astype(x.dtype)}


@kernel("affine_channel_grad")
def affine_channel_grad(k):
    x, dout = k.x("X"), k.x("Out@GRAD")
    others = tuple(d for d in range(x.ndim) if d != _channel_axis(k, x))
    scale = _per_channel(k, x, k.x("Scale"), "Scale")
    return k.grads({"X@GRAD": lambda: (dout * scale).astype(x.dtype),
                    "Scale@GRAD": lambda: (dout * x).sum(axis=others, dtype=np.float64).astype(x.dtype),
                    "Bias@GRAD": lambda: dout.sum(axis=others, dtype=np.float64).astype(x.dtype)})


def _shuffled(x: np.ndarray, groups: int) -> np.ndarray:
    """Channel j * groups + i of the result is channel i * (C / groups) + j of x."""
    n, channels, h, w = x.shape
    if channels % groups:
        raise ValueError(f"X's {channels} channels do not divide into {groups} groups")
    return np.ascontiguousarray(x.reshape(n, groups, channels // groups, h, w).swapaxes(1, 2)).reshape(x.shape)


@kernel("shuffle_channel")
def shuffle_channel(k):
    return {"Out": _shuffled(k.x("X"), k.attr("group"))}


@kernel("shuffle_channel_grad")
def shuffle_channel_grad(k):
    dout = k.x("Out@GRAD")
    if dout.shape[1] % k.attr("group"):
        raise ValueError(f"Out@GRAD's {dout.shape[1]} channels do not divide into {k.attr('group')} groups")
    return {"X@GRAD": _shuffled(dout, dout.shape[1] // k.attr("group"))}   # the inverse: C / group groups


def _positions(k, x: np.ndarray) -> np.ndarray:
    """Each row's position in its sequence: [L] for a 3-D X, [total] from the LoD of a 2-D one."""
    if x.ndim == 3:
        return np.arange(x.shape[1])
    lod = k.lod("X")
    if x.ndim != 2 or lod is None or len(lod) != 1:
        levels = f"with {len(lod)} LoD levels" if lod else "without a LoD"
        raise ValueError(f"X must be 3-D [N, L, P], or 2-D with a one-level LoD (packed sequences, as Paddle "
                         f"requires), got shape {list(x.shape)} {levels}")
    offsets = np.asarray(lod[0])
    return np.arange(x.shape[0]) - np.repeat(offsets[:-1], np.diff(offsets))


def _encoding(k, x: np.ndarray) -> np.ndarray:
    """beta * [sin(pos / 10000^(i / (half - 1))), then the cosines], in double as Paddle computes it."""
    half = x.shape[-1] // 2
    if x.shape[-1] % 2:
        raise ValueError(f"X's feature size {x.shape[-1]} must be even (sines, then cosines)")
    rates = 10000.0 ** (np.arange(half) / (half - 1)) if half > 1 else np.full(half, 10000.0)
    angles = _positions(k, x)[:, None] / rates
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1) * float(np.float32(k.attr("beta")))


@kernel("add_position_encoding")
def add_position_encoding(k):
    """Out = alpha * X + beta * encoding (X * alpha in X's dtype, the sum in double, as Paddle's kernel)."""
    x = k.x("X")
    scaled = x * x.dtype.type(np.float32(k.attr("alpha")))
    return {"Out": (scaled.astype(np.float64) + _encoding(k, x)).astype(x.dtype)}


@kernel("add_position_encoding_grad")
def add_position_encoding_grad(k):
    dout = k.x("Out@GRAD")
    return {"X@GRAD": dout * dout.dtype.type(np.float32(k.attr("alpha")))}
