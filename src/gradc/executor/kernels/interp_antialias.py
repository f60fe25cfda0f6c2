"""Kernels of gradc.ops.interp_antialias: per spatial axis an [out, in] matrix of the filter's normalised taps (as
Paddle's CPU kernel: the ratio from the sizes or the scale, taps over the input pixels whose centres lie within
the support of the output pixel's centre), applied axis by axis; the grad applies the transposes. Equal sizes
copy, as Paddle's kernel does."""

from __future__ import annotations

import math

import numpy as np

from ...limits import check_shape
from ...ops import interp_antialias as ops
from ...ops.interp import plan
from . import kernel
from .conv import channels_back, channels_first
from .pool_windows import along_axes

CUBIC_A = -0.5


def _triangle(t):
    return np.maximum(1.0 - np.abs(t), 0.0)


def _cubic(t):
    t = np.abs(t)
    near = ((CUBIC_A + 2) * t - (CUBIC_A + 3)) * t * t + 1
    far = (((t - 5) * t + 8) * t - 4) * CUBIC_A
    return np.where(t < 1, near, np.where(t < 2, far, 0.0))


FILTERS = {"bilinear": (_triangle, 2), "bicubic": (_cubic, 4)}


def _ratio(size: int, out: int, scale: float, align_corners: bool) -> float:
    """Input pixels per output pixel, float32 as Paddle's (align_corners: corner to corner)."""
    if align_corners:
        return float(np.float32(size - 1) / np.float32(out - 1)) if out > 1 else 0.0
    return float(np.float32(1.0 / scale)) if scale > 0 else float(np.float32(size) / np.float32(out))


def _weights(method: str, size: int, out: int, ratio: float) -> np.ndarray:
    taper, width = FILTERS[method]
    support = width * 0.5 * ratio if ratio >= 1.0 else width * 0.5
    stretch = 1.0 / ratio if ratio >= 1.0 else 1.0
    matrix = np.zeros((out, size))
    for o in range(out):
        centre = ratio * (o + 0.5)
        start = max(int(math.floor(centre - support + 0.5)), 0)
        stop = min(int(math.floor(centre + support + 0.5)), size)
        taps = taper((np.arange(start, stop) - centre + 0.5) * stretch)
        total = taps.sum()
        matrix[o, start:stop] = taps / total if total != 0 else taps
    return matrix


def _setup(k):
    """(channels-last?, x channels first, the per-axis weight matrices; None where the sizes do not change)."""
    x, attr = k.x("x"), ops.attr_of(k.attr)
    ops.check(attr, x.ndim)
    last = attr("data_layout") == "NHWC"
    x = channels_first(x, last, x.ndim - 2)
    size_tensor = [int(t.reshape(-1)[0]) for t in k.xs("size_tensor")] or None
    out_size, scale = k.optional("out_size"), k.optional("scale_tensor")
    resize = plan(attr, list(x.shape[2:]), size_tensor, None if out_size is None else out_size.reshape(-1).tolist(),
                  None if scale is None else scale.reshape(-1).tolist())
    check_shape([*x.shape[:2], *resize.sizes], x.dtype, "the resized tensor")
    if list(x.shape[2:]) == resize.sizes:
        return last, x, None
    matrices = [_weights(attr("interp_method"), size, out, _ratio(size, out, scale, attr("align_corners")))
                for size, out, scale in zip(x.shape[2:], resize.sizes, resize.scales)]
    return last, x, matrices


@kernel("interp_antialias")
def interp_antialias(k):
    last, x, matrices = _setup(k)
    if matrices is None:
        return {"output": channels_back(x.copy(), last)}
    return {"output": channels_back(along_axes(x, [m.astype(x.dtype) for m in matrices]), last)}


@kernel("interp_antialias_grad")
def interp_antialias_grad(k):
    last, x, matrices = _setup(k)
    dout = channels_first(k.x("output@GRAD"), last, x.ndim - 2)
    if matrices is None:
        return {"x@GRAD": channels_back(dout.copy(), last)}
    if [m.shape[0] for m in matrices] != list(dout.shape[2:]):
        raise ValueError(f"output@GRAD has spatial sizes {list(dout.shape[2:])}, but the resize gives "
                         f"{[m.shape[0] for m in matrices]}")
    return {"x@GRAD": channels_back(along_axes(dout, [m.T.astype(dout.dtype) for m in matrices]), last)}
