"""The pool2d/pool3d kernels (gradc.ops.conv's pooling ops), channels first like the convolutions, and the
window helpers gradc.executor.kernels.pool and interp share.

Average pooling is separable: one 0/1 window-membership matrix per spatial axis (which also covers adaptive
bins and ceil_mode), applied axis by axis, then / count. Max pooling goes through strided views of the input
(gradc.executor.kernels.pool_taps) where the windows share a size; adaptive windows, and the grad of a window
whose maximum is the fill value, are gathered with one np.take.
"""

from __future__ import annotations

import math
from functools import reduce

import numpy as np

from ...ops import conv as ops
from . import kernel
from .conv import channels_back, channels_first
from .onednn_quant import NUMPY_TYPES, saturated
from .pool_taps import PADDLE_MAX_POOL_INIT, tap_geometry, taps_max, taps_max_grad


def axis_windows(size, out, k, stride, pad, adaptive, exclusive):
    """Along one axis: each output's window [start, end) clipped to the input, and the length average
    pooling divides by. Non-exclusive windows count padding up to ``pad`` cells past either edge
    (Paddle keeps only the leading pad), so a ceil_mode window hanging past that is cut short."""
    o = np.arange(out)
    if adaptive:
        start, end = o * size // out, -(-(o + 1) * size // out)
        return (start, end), end - start
    start = o * stride - pad
    clipped = np.maximum(start, 0), np.minimum(start + k, size)
    return clipped, (clipped[1] - clipped[0] if exclusive else np.minimum(start + k, size + pad) - start)


def _pool_windows(k, x, dims: int):
    """Per spatial axis: window bounds; the divisor of average pooling, shaped like the output; and the taps of
    windows that share a size (None for adaptive ones)."""
    ksize, pads, out = ops.pool_geometry(x.shape[2:], ops.attr_values(k, ops.pool_attrs(dims)))
    axes = [axis_windows(x.shape[2 + i], out[i], ksize[i], k.attr("strides")[i], pads[2 * i], k.attr("adaptive"),
                          k.attr("exclusive")) for i in range(dims)]
    divisor = np.maximum(reduce(np.multiply.outer, [length for _, length in axes]), 1)  # empty ceil_mode windows: 0
    taps = None if k.attr("adaptive") else tap_geometry(x, ksize, k.attr("strides"), pads, out)
    return [bounds for bounds, _ in axes], divisor.astype(x.dtype), taps


def membership(size, bounds, dtype):
    """[out, size] 0/1 matrix: which inputs each output window covers (average pooling is separable)."""
    start, end = bounds
    i = np.arange(size)
    return ((i >= start[:, None]) & (i < end[:, None])).astype(dtype)


def along_axes(x, matrices):
    """x [N, C, *S] with each spatial axis i mapped through matrices[i] ([new, old]), first axis first."""
    for axis, m in enumerate(matrices, start=2):
        x = x @ m.T if axis == x.ndim - 1 else np.moveaxis(m @ np.moveaxis(x, axis, -2), -2, axis)
    return x


def _broadcast_axes(arrays):
    """Per-axis [L_i, O_i] arrays as [L_0, .., L_n, O_0, .., O_n] broadcastable views."""
    dims = len(arrays)
    shaped = []
    for i, a in enumerate(arrays):
        shape = [1] * 2 * dims
        shape[i], shape[dims + i] = a.shape
        shaped.append(a.reshape(shape))
    return shaped


def max_windows(x, bounds):
    """Max pooling's windows of x [N, C, *S] as [N*C, L, prod(out)] (L = cells of the longest window,
    shorter ones padded with the dtype's min) and the flat input index of each cell [L, prod(out)]."""
    idx, valid = [], []
    for size, (start, end) in zip(x.shape[2:], bounds):
        span = start + np.arange(max(int((end - start).max()), 1))[:, None]  # [window offset, output]
        idx.append(np.minimum(span, size - 1))
        valid.append(span < end)
    strides = [math.prod(x.shape[3 + i:]) for i in range(len(bounds))]
    flat = sum(i * s for i, s in zip(_broadcast_axes(idx), strides))
    ok = reduce(np.logical_and, _broadcast_axes(valid))
    cells = (math.prod(i.shape[0] for i in idx), math.prod(i.shape[1] for i in idx))
    flat, ok = np.broadcast_to(flat, ok.shape).reshape(cells), ok.reshape(cells)
    win = np.take(x.reshape(x.shape[0] * x.shape[1], -1), flat, axis=1)
    return np.where(ok, win, x.dtype.type(PADDLE_MAX_POOL_INIT)), flat


def _max_pool_grad(x, dout, bounds):
    """The first maximum of each window (row-major, as in Paddle) gets the window's grad."""
    win, flat = max_windows(x, bounds)
    best, pick = win.max(1), np.zeros(win[:, 0].shape, dtype=np.intp)
    for offset in reversed(range(win.shape[1])):  # a loop over window cells: argmax of a short axis is slow
        pick = np.where(win[:, offset] == best, offset, pick)
    nonempty = reduce(np.logical_and.outer, [end > start for start, end in bounds]).ravel()  # ceil_mode
    n_c, size = win.shape[0], math.prod(x.shape[2:])
    target = np.arange(n_c)[:, None] * size + flat[pick, np.arange(flat.shape[1])]
    dx = np.bincount(target.ravel(), weights=(dout.reshape(n_c, -1) * nonempty).ravel(), minlength=n_c * size)
    return dx.astype(dout.dtype, copy=False).reshape(x.shape)


def _forward_out(k, last: bool, dims: int):
    """The forward's Out, channels first, where the grad op has it (gradc's maker gives it, as Paddle's does)."""
    return channels_first(k.x("Out"), last, dims) if k.has("Out") else None


def _pool_kernels(name: str, dims: int) -> None:
    @kernel(name)
    def forward(k):
        last = ops.channel_last(k.attr("data_format"))
        x = channels_first(k.x("X"), last, dims)
        quantized = NUMPY_TYPES.get(x.dtype)   # oneDNN's int8 / uint8 pooling: averages rounded half to even
        x = x.astype(np.float64) if quantized else x
        bounds, divisor, taps = _pool_windows(k, x, dims)
        if k.attr("pooling_type") == "max" and taps is not None:
            out = taps_max(x, taps)
        elif k.attr("pooling_type") == "max":
            out = max_windows(x, bounds)[0].max(1).reshape(*x.shape[:2], *(len(b[0]) for b in bounds))
        else:
            out = along_axes(x, [membership(size, b, x.dtype) for size, b in zip(x.shape[2:], bounds)]) / divisor
        return {"Out": channels_back(saturated(out, quantized) if quantized else out, last)}

    @kernel(name + "_grad")
    def backward(k):
        last = ops.channel_last(k.attr("data_format"))
        x, dout = channels_first(k.x("X"), last, dims), channels_first(k.x("Out@GRAD"), last, dims)
        bounds, divisor, taps = _pool_windows(k, x, dims)
        if k.attr("pooling_type") != "max":
            adjoints = [membership(size, b, dout.dtype).T for size, b in zip(x.shape[2:], bounds)]
            dx = along_axes(dout / divisor, adjoints)
        elif (dx := None if taps is None else taps_max_grad(x, dout, taps, _forward_out(k, last, dims))) is None:
            dx = _max_pool_grad(x, dout, bounds)
        return {"X@GRAD": channels_back(dx, last)}


for _name, _dims in ops.POOL_OPS.items():
    _pool_kernels(_name, _dims)
