"""Kernels of gradc.ops.conv, computed in NCHW (NHWC is transposed at the edges).

Convolution is im2col + one batched matmul per group: the columns are a strided view of the padded
input (sliding_window_view), copied once into [groups, C/g*kh*kw, N*OH*OW]. Its two adjoints give
every other kernel: the input grad scatters W^T @ dOut back with col2im, the filter grad is
dOut @ cols^T, and conv2d_transpose is the input grad of the conv whose filter it shares.

Average pooling is separable: A_h @ x @ A_w^T / count, with 0/1 window-membership matrices per axis
(which also covers adaptive bins and ceil_mode). Max pooling gathers the windows with one np.take.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...ops import conv as ops
from . import kernel


class Geometry(NamedTuple):
    strides: tuple
    pads: tuple        # top, bottom, left, right
    dilations: tuple
    groups: int


def _attrs(k, names) -> dict:
    return {name: k.attr(name) for name in names}


def _geometry(k, in_hw, k_hw) -> Geometry:
    pads, dils = ops.resolve_padding(in_hw, k_hw, k.attr("strides"), k.attr("paddings"), k.attr("dilations"),
                                     k.attr("padding_algorithm"))
    return Geometry(tuple(k.attr("strides")), tuple(pads), tuple(dils), k.attr("groups"))


def _to_nchw(a, last):
    if a.ndim != 4:
        raise ValueError(f"expects 4-D {'NHWC' if last else 'NCHW'} tensors, got shape {list(a.shape)}")
    return a.transpose(0, 3, 1, 2) if last else a


def _from_nchw(a, last):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1) if last else a)


def _cols(x, k_hw, geo: Geometry):
    """Windows of x [N, C, H, W] as [groups, C/g * kh * kw, N * OH * OW]."""
    (kh, kw), (sh, sw), (dh, dw) = k_hw, geo.strides, geo.dilations
    pt, pb, pl, pr = geo.pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    win = sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
    n, c, oh, ow = win.shape[:4]
    g = geo.groups
    cols = win.reshape(n, g, c // g, oh, ow, kh, kw).transpose(1, 2, 5, 6, 0, 3, 4)
    return cols.reshape(g, c // g * kh * kw, n * oh * ow), (oh, ow)


def _grouped(a, g):
    """[N, C, H, W] -> [g, C/g, N*H*W], the matmul operand layout of an activation."""
    n, c, h, w = a.shape
    return a.reshape(n, g, c // g, h * w).transpose(1, 2, 0, 3).reshape(g, c // g, n * h * w)


def _ungrouped(a, n, hw):
    """[g, C/g, N*H*W] -> [N, C, H, W]."""
    g, cg = a.shape[:2]
    return a.reshape(g * cg, n, *hw).transpose(1, 0, 2, 3)


def conv(x, w, geo: Geometry):
    """y = conv(x, w): x [N, C, H, W], w [O, C/g, kh, kw] -> [N, O, OH, OW]."""
    g = geo.groups
    cols, out_hw = _cols(x, w.shape[2:], geo)
    return _ungrouped(w.reshape(g, w.shape[0] // g, -1) @ cols, x.shape[0], out_hw)


def conv_filter_grad(x, dy, w_shape, geo: Geometry):
    """dL/dw of y = conv(x, w), given dy = dL/dy."""
    cols, _ = _cols(x, w_shape[2:], geo)
    return (_grouped(dy, geo.groups) @ cols.transpose(0, 2, 1)).reshape(w_shape)


def conv_input_grad(dy, w, x_hw, geo: Geometry):
    """dL/dx of y = conv(x, w) for x of spatial size x_hw: col2im of W^T @ dy."""
    g, (n, _, oh, ow), (o, cg, kh, kw) = geo.groups, dy.shape, w.shape
    (sh, sw), (dh, dw), (pt, pb, pl, pr) = geo.strides, geo.dilations, geo.pads
    wt = w.reshape(g, o // g, cg * kh * kw).transpose(0, 2, 1)
    dcols = (wt @ _grouped(dy, g)).reshape(g * cg, kh, kw, n, oh, ow).transpose(1, 2, 3, 0, 4, 5)
    dxp = np.zeros((n, g * cg, x_hw[0] + pt + pb, x_hw[1] + pl + pr), dtype=dy.dtype)
    for i in range(kh):  # col2im: one strided add per kernel position (overlapping windows)
        for j in range(kw):
            dxp[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw] += dcols[i, j]
    return dxp[:, :, pt:pt + x_hw[0], pl:pl + x_hw[1]]


def _conv_args(k, transpose=False):
    last = ops.channel_last(k.attr("data_format"))
    x, w = _to_nchw(k.x("Input"), last), _to_nchw(k.x("Filter"), False)
    channels, groups = (w.shape[0], 1) if transpose else (w.shape[1], k.attr("groups"))
    if x.shape[1] != channels * groups or w.shape[0] % k.attr("groups"):
        raise ValueError(f"Input has {x.shape[1]} channels ({'NHWC' if last else 'NCHW'}), which Filter "
                         f"{list(w.shape)} with groups={k.attr('groups')} does not fit")
    geo = _geometry(k, x.shape[2:], w.shape[2:])
    if not transpose:
        ops.conv_out_hw(x.shape[2:], w.shape[2:], geo.strides, geo.pads, geo.dilations)  # raises if it does not fit
    return last, x, w, geo


@kernel("conv2d", "depthwise_conv2d")
def conv2d(k):
    last, x, w, geo = _conv_args(k)
    return {"Output": _from_nchw(conv(x, w, geo), last)}


@kernel("conv2d_grad", "depthwise_conv2d_grad")
def conv2d_grad(k):
    last, x, w, geo = _conv_args(k)
    dy = _to_nchw(k.x("Output@GRAD"), last)
    return k.grads({"Input@GRAD": lambda: _from_nchw(conv_input_grad(dy, w, x.shape[2:], geo), last),
                    "Filter@GRAD": lambda: conv_filter_grad(x, dy, w.shape, geo)})


# conv2d_transpose(x, w) is the input grad of conv(y, w) with y of the transpose's output size.
@kernel("conv2d_transpose")
def conv2d_transpose(k):
    last, x, w, geo = _conv_args(k, transpose=True)
    out_hw = ops.conv_transpose_out_hw(x.shape[2:], w.shape[2:], _attrs(k, ops.CONV_TRANSPOSE_ATTRS))
    return {"Output": _from_nchw(conv_input_grad(x, w, out_hw, geo), last)}


@kernel("conv2d_transpose_grad")
def conv2d_transpose_grad(k):
    last, x, w, geo = _conv_args(k, transpose=True)
    dy = _to_nchw(k.x("Output@GRAD"), last)
    return k.grads({"Input@GRAD": lambda: _from_nchw(conv(dy, w, geo), last),
                    "Filter@GRAD": lambda: conv_filter_grad(dy, x, w.shape, geo)})


def _axis_windows(size, out, k, stride, pad, adaptive, exclusive):
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


def _pool_windows(k, x):
    """Per axis (H, W): window bounds, plus the [OH, OW] divisor of average pooling."""
    ksize, pads, out_hw = ops.pool_geometry(x.shape[2:], _attrs(k, ops.POOL_ATTRS))
    (bounds_h, len_h), (bounds_w, len_w) = (
        _axis_windows(x.shape[2 + i], out_hw[i], ksize[i], k.attr("strides")[i], pads[2 * i], k.attr("adaptive"),
                      k.attr("exclusive")) for i in range(2))
    divisor = np.maximum(np.outer(len_h, len_w), 1)  # an empty ceil_mode window averages to 0, not 0/0
    return (bounds_h, bounds_w), divisor.astype(x.dtype)


def _membership(size, bounds, dtype):
    """[out, size] 0/1 matrix: which inputs each output window covers (average pooling is separable)."""
    start, end = bounds
    i = np.arange(size)
    return ((i >= start[:, None]) & (i < end[:, None])).astype(dtype)


def _windows(x, bounds):
    """Max pooling's windows of x [N, C, H, W] as [N*C, L, OH*OW] (L = the longest window, shorter ones
    padded with the dtype's min) and the flat input index of each cell [L, OH*OW]."""
    idx, valid = [], []
    for size, (start, end) in zip(x.shape[2:], bounds):
        span = start + np.arange(max(int((end - start).max()), 1))[:, None]  # [window offset, output]
        idx.append(np.minimum(span, size - 1))
        valid.append(span < end)
    (ih, iw), (vh, vw) = idx, valid
    cells = (ih.shape[0] * iw.shape[0], ih.shape[1] * iw.shape[1])
    flat = (ih[:, None, :, None] * x.shape[3] + iw[None, :, None, :]).reshape(cells)
    win = np.take(x.reshape(x.shape[0] * x.shape[1], -1), flat, axis=1)
    return np.where((vh[:, None, :, None] & vw[None, :, None, :]).reshape(cells), win, np.finfo(x.dtype).min), flat


def _max_pool_grad(x, dout, bounds):
    """The first maximum of each window (row-major, as in Paddle) gets the window's grad."""
    win, flat = _windows(x, bounds)
    best, pick = win.max(1), np.zeros(win[:, 0].shape, dtype=np.intp)
    for offset in reversed(range(win.shape[1])):  # a loop over window cells: argmax of a short axis is slow
        pick = np.where(win[:, offset] == best, offset, pick)
    nonempty = np.outer(*(end > start for start, end in bounds)).ravel()  # ceil_mode can leave a window empty
    n_c, hw = win.shape[0], x.shape[2] * x.shape[3]
    target = np.arange(n_c)[:, None] * hw + flat[pick, np.arange(flat.shape[1])]
    dx = np.bincount(target.ravel(), weights=(dout.reshape(n_c, -1) * nonempty).ravel(), minlength=n_c * hw)
    return dx.astype(dout.dtype, copy=False).reshape(x.shape)


@kernel("pool2d")
def pool2d(k):
    last = ops.channel_last(k.attr("data_format"))
    x = _to_nchw(k.x("X"), last)
    bounds, divisor = _pool_windows(k, x)
    if k.attr("pooling_type") == "max":
        out = _windows(x, bounds)[0].max(1).reshape(*x.shape[:2], *(len(b[0]) for b in bounds))
    else:
        ah, aw = (_membership(size, b, x.dtype) for size, b in zip(x.shape[2:], bounds))
        out = ah @ x @ aw.T / divisor
    return {"Out": _from_nchw(out, last)}


@kernel("pool2d_grad")
def pool2d_grad(k):
    last = ops.channel_last(k.attr("data_format"))
    x, dout = _to_nchw(k.x("X"), last), _to_nchw(k.x("Out@GRAD"), last)
    bounds, divisor = _pool_windows(k, x)
    if k.attr("pooling_type") == "max":
        dx = _max_pool_grad(x, dout, bounds)
    else:
        ah, aw = (_membership(size, b, dout.dtype) for size, b in zip(x.shape[2:], bounds))
        dx = ah.T @ (dout / divisor) @ aw
    return {"X@GRAD": _from_nchw(dx, last)}
