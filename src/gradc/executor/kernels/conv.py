"""Kernels of gradc.ops.conv, computed channels first ([N, C, *spatial]; channels-last data is moved at
the edges), for any number of spatial dims.

Convolution is im2col + one batched matmul per group: the columns are a strided view of the padded
input (sliding_window_view), copied once into [groups, C/g * prod(kernel), N * prod(out)]. Its two
adjoints give every other kernel: the input grad scatters W^T @ dOut back with col2im, the filter grad
is dOut @ cols^T, and conv_transpose is the input grad of the conv whose filter it shares.

Average pooling is separable: one 0/1 window-membership matrix per spatial axis (which also covers
adaptive bins and ceil_mode), applied axis by axis, then / count. Max pooling gathers the windows with
one np.take.
"""

from __future__ import annotations

import itertools
import math
from functools import reduce
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...ops import conv as ops
from . import kernel


class Geometry(NamedTuple):
    strides: tuple
    pads: tuple        # before, after per spatial dim
    dilations: tuple
    groups: int


def _geometry(k, sizes, k_sizes) -> Geometry:
    pads, dils = ops.resolve_padding(sizes, k_sizes, k.attr("strides"), k.attr("paddings"), k.attr("dilations"),
                                     k.attr("padding_algorithm"))
    return Geometry(tuple(k.attr("strides")), tuple(pads), tuple(dils), k.attr("groups"))


def channels_first(a, last: bool, dims: int):
    if a.ndim != dims + 2:
        spatial = ops.AXIS_NAMES[-dims:]
        raise ValueError(f"expects {dims + 2}-D {f'N{spatial}C' if last else f'NC{spatial}'} tensors, "
                         f"got shape {list(a.shape)}")
    return np.moveaxis(a, -1, 1) if last else a


def channels_back(a, last: bool):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1) if last else a)


def im2col(x, k_sizes, geo: Geometry):
    """Windows of x [N, C, *S] as [groups, C/g * prod(kernel), N * prod(out)], and the out sizes."""
    dims = len(k_sizes)
    pairs = [(geo.pads[2 * i], geo.pads[2 * i + 1]) for i in range(dims)]
    xp = np.pad(x, [(0, 0), (0, 0), *pairs])
    spans = [(k - 1) * d + 1 for k, d in zip(k_sizes, geo.dilations)]
    win = sliding_window_view(xp, spans, axis=tuple(range(2, 2 + dims)))
    win = win[(slice(None), slice(None), *(slice(None, None, s) for s in geo.strides),
               *(slice(None, None, d) for d in geo.dilations))]
    n, c, out = win.shape[0], win.shape[1], win.shape[2:2 + dims]
    g = geo.groups
    cols = win.reshape(n, g, c // g, *out, *k_sizes)
    cols = cols.transpose(1, 2, *range(3 + dims, 3 + 2 * dims), 0, *range(3, 3 + dims))
    return cols.reshape(g, c // g * math.prod(k_sizes), n * math.prod(out)), tuple(out)


def _grouped(a, g):
    """[N, C, *S] -> [g, C/g, N * prod(S)], the matmul operand layout of an activation."""
    n, c = a.shape[:2]
    return a.reshape(n, g, c // g, -1).transpose(1, 2, 0, 3).reshape(g, c // g, -1)


def _ungrouped(a, n, sizes):
    """[g, C/g, N * prod(S)] -> [N, C, *S]."""
    g, cg = a.shape[:2]
    return a.reshape(g * cg, n, *sizes).transpose(1, 0, *range(2, 2 + len(sizes)))


def conv(x, w, geo: Geometry):
    """y = conv(x, w): x [N, C, *S], w [O, C/g, *K] -> [N, O, *out]."""
    g = geo.groups
    cols, out = im2col(x, w.shape[2:], geo)
    return _ungrouped(w.reshape(g, w.shape[0] // g, -1) @ cols, x.shape[0], out)


def conv_filter_grad(x, dy, w_shape, geo: Geometry):
    """dL/dw of y = conv(x, w), given dy = dL/dy."""
    cols, _ = im2col(x, w_shape[2:], geo)
    return (_grouped(dy, geo.groups) @ cols.transpose(0, 2, 1)).reshape(w_shape)


def col2im(cols, sizes, geo: Geometry):
    """The adjoint of the windows: cols [C, *kernel, N, *out] summed back into [N, C, *sizes]."""
    dims = len(sizes)
    channels, k_sizes, n, out = cols.shape[0], cols.shape[1:dims + 1], cols.shape[dims + 1], cols.shape[dims + 2:]
    cols = cols.transpose(*range(1, dims + 1), dims + 1, 0, *range(dims + 2, 2 * dims + 2))
    padded = [size + geo.pads[2 * i] + geo.pads[2 * i + 1] for i, size in enumerate(sizes)]
    xp = np.zeros((n, channels, *padded), dtype=cols.dtype)
    for offset in itertools.product(*map(range, k_sizes)):  # one strided add per kernel position
        window = tuple(slice(i * d, i * d + (m - 1) * s + 1, s)
                       for i, d, m, s in zip(offset, geo.dilations, out, geo.strides))
        xp[(slice(None), slice(None), *window)] += cols[offset]
    return xp[(slice(None), slice(None), *(slice(geo.pads[2 * i], geo.pads[2 * i] + size)
                                           for i, size in enumerate(sizes)))]


def conv_input_grad(dy, w, x_sizes, geo: Geometry):
    """dL/dx of y = conv(x, w) for x of spatial sizes x_sizes: col2im of W^T @ dy."""
    g, n, out, (o, cg), k_sizes = geo.groups, dy.shape[0], dy.shape[2:], w.shape[:2], w.shape[2:]
    wt = w.reshape(g, o // g, -1).transpose(0, 2, 1)
    return col2im((wt @ _grouped(dy, g)).reshape(g * cg, *k_sizes, n, *out), x_sizes, geo)


def _conv_args(k, dims: int, transpose: bool = False):
    last = ops.channel_last(k.attr("data_format"))
    x, w = channels_first(k.x("Input"), last, dims), channels_first(k.x("Filter"), False, dims)
    channels, groups = (w.shape[0], 1) if transpose else (w.shape[1], k.attr("groups"))
    if k.attr("groups") < 1 or x.shape[1] != channels * groups or w.shape[0] % k.attr("groups"):
        raise ValueError(f"Input has {x.shape[1]} channels, which Filter {list(w.shape)} with "
                         f"groups={k.attr('groups')} does not fit")
    geo = _geometry(k, x.shape[2:], w.shape[2:])
    if not transpose:
        ops.conv_out_sizes(x.shape[2:], w.shape[2:], geo.strides, geo.pads, geo.dilations)  # raises if it does not fit
    return last, x, w, geo


def _conv_kernels(name: str, dims: int) -> None:
    @kernel(name)
    def forward(k):
        last, x, w, geo = _conv_args(k, dims)
        return {"Output": channels_back(conv(x, w, geo), last)}

    @kernel(name + "_grad")
    def backward(k):
        last, x, w, geo = _conv_args(k, dims)
        dy = channels_first(k.x("Output@GRAD"), last, dims)
        return k.grads({"Input@GRAD": lambda: channels_back(conv_input_grad(dy, w, x.shape[2:], geo), last),
                        "Filter@GRAD": lambda: conv_filter_grad(x, dy, w.shape, geo)})


# conv_transpose(x, w) is the input grad of conv(y, w) with y of the transpose's output size.
def _conv_transpose_kernels(name: str, dims: int) -> None:
    @kernel(name)
    def forward(k):
        last, x, w, geo = _conv_args(k, dims, transpose=True)
        out = ops.conv_transpose_out_sizes(x.shape[2:], w.shape[2:], ops.attr_values(k, ops.conv_transpose_attrs(dims)))
        return {"Output": channels_back(conv_input_grad(x, w, out, geo), last)}

    @kernel(name + "_grad")
    def backward(k):
        last, x, w, geo = _conv_args(k, dims, transpose=True)
        dy = channels_first(k.x("Output@GRAD"), last, dims)
        return k.grads({"Input@GRAD": lambda: channels_back(conv(dy, w, geo), last),
                        "Filter@GRAD": lambda: conv_filter_grad(dy, x, w.shape, geo)})


for _name, _dims in ops.CONV_OPS.items():
    _conv_kernels(_name, _dims)
for _name, _dims in ops.CONV_TRANSPOSE_OPS.items():
    _conv_transpose_kernels(_name, _dims)


# ---------------------------------------------------------------- pooling
PADDLE_MAX_POOL_INIT = -float(np.finfo(np.float32).max)   # what an empty max window gives, in any dtype (Paddle)

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
    """Per spatial axis: window bounds; plus the divisor of average pooling, shaped like the output."""
    ksize, pads, out = ops.pool_geometry(x.shape[2:], ops.attr_values(k, ops.pool_attrs(dims)))
    axes = [axis_windows(x.shape[2 + i], out[i], ksize[i], k.attr("strides")[i], pads[2 * i], k.attr("adaptive"),
                          k.attr("exclusive")) for i in range(dims)]
    divisor = np.maximum(reduce(np.multiply.outer, [length for _, length in axes]), 1)  # empty ceil_mode windows: 0
    return [bounds for bounds, _ in axes], divisor.astype(x.dtype)


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


def _pool_kernels(name: str, dims: int) -> None:
    @kernel(name)
    def forward(k):
        last = ops.channel_last(k.attr("data_format"))
        x = channels_first(k.x("X"), last, dims)
        bounds, divisor = _pool_windows(k, x, dims)
        if k.attr("pooling_type") == "max":
            out = max_windows(x, bounds)[0].max(1).reshape(*x.shape[:2], *(len(b[0]) for b in bounds))
        else:
            out = along_axes(x, [membership(size, b, x.dtype) for size, b in zip(x.shape[2:], bounds)]) / divisor
        return {"Out": channels_back(out, last)}

    @kernel(name + "_grad")
    def backward(k):
        last = ops.channel_last(k.attr("data_format"))
        x, dout = channels_first(k.x("X"), last, dims), channels_first(k.x("Out@GRAD"), last, dims)
        bounds, divisor = _pool_windows(k, x, dims)
        if k.attr("pooling_type") == "max":
            dx = _max_pool_grad(x, dout, bounds)
        else:
            adjoints = [membership(size, b, dout.dtype).T for size, b in zip(x.shape[2:], bounds)]
            dx = along_axes(dout / divisor, adjoints)
        return {"X@GRAD": channels_back(dx, last)}


for _name, _dims in ops.POOL_OPS.items():
    _pool_kernels(_name, _dims)
