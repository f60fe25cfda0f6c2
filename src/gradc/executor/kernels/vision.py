"""Kernels of gradc.ops.vision. The shuffles are reshape-transpose-reshape permutations (a grad is the
inverse permutation of Out@GRAD); unfold is the conv kernels' im2col, fold its adjoint col2im."""

from __future__ import annotations

from ...ops import vision as ops
from . import kernel
from .conv_columns import Geometry, col2im, im2col


def _last(k) -> bool:
    return k.attr("data_format") == "NHWC"


def _pixel_shuffle(x, r: int, last: bool):
    """[N, C*r*r, H, W] -> [N, C, H*r, W*r] (channels last: [N, H, W, C*r*r] -> [N, H*r, W*r, C])."""
    if last:
        n, h, w, c = x.shape
        return x.reshape(n, h, w, c // (r * r), r, r).transpose(0, 1, 4, 2, 5, 3).reshape(n, h * r, w * r, -1)
    n, c, h, w = x.shape
    return x.reshape(n, c // (r * r), r, r, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, -1, h * r, w * r)


def _pixel_unshuffle(x, r: int, last: bool):
    """The inverse of _pixel_shuffle."""
    if last:
        n, h, w, c = x.shape
        return x.reshape(n, h // r, r, w // r, r, c).transpose(0, 1, 3, 5, 2, 4).reshape(n, h // r, w // r, -1)
    n, c, h, w = x.shape
    return x.reshape(n, c, h // r, r, w // r, r).transpose(0, 1, 3, 5, 2, 4).reshape(n, -1, h // r, w // r)


def _channel_shuffle(x, groups: int, last: bool):
    """Channels [g, C/g] -> [C/g, g]."""
    if last:
        n, h, w, c = x.shape
        return x.reshape(n, h, w, groups, c // groups).transpose(0, 1, 2, 4, 3).reshape(x.shape)
    n, c, h, w = x.shape
    return x.reshape(n, groups, c // groups, h, w).transpose(0, 2, 1, 3, 4).reshape(x.shape)


def _checked(x, divisor: int, axis: int, what: str):
    if x.ndim != 4 or x.shape[axis] % divisor:
        raise ValueError(f"expects a 4-D input whose {what} divides by {divisor}, got shape {list(x.shape)}")
    return x


@kernel("pixel_shuffle")
def pixel_shuffle(k):
    r, last = k.attr("upscale_factor"), _last(k)
    return {"Out": _pixel_shuffle(_checked(k.x("X"), r * r, -1 if last else 1, "channel count"), r, last)}


@kernel("pixel_shuffle_grad")
def pixel_shuffle_grad(k):
    return {"X@GRAD": _pixel_unshuffle(k.x("Out@GRAD"), k.attr("upscale_factor"), _last(k))}


@kernel("pixel_unshuffle")
def pixel_unshuffle(k):
    r, last = k.attr("downscale_factor"), _last(k)
    x = _checked(k.x("X"), r, 1 if last else 2, "height")
    return {"Out": _pixel_unshuffle(_checked(x, r, 2 if last else 3, "width"), r, last)}


@kernel("pixel_unshuffle_grad")
def pixel_unshuffle_grad(k):
    return {"X@GRAD": _pixel_shuffle(k.x("Out@GRAD"), k.attr("downscale_factor"), _last(k))}


@kernel("channel_shuffle")
def channel_shuffle(k):
    groups, last = k.attr("groups"), _last(k)
    return {"Out": _channel_shuffle(_checked(k.x("X"), groups, -1 if last else 1, "channel count"), groups, last)}


@kernel("channel_shuffle_grad")
def channel_shuffle_grad(k):
    dout, groups = k.x("Out@GRAD"), k.attr("groups")
    channels = dout.shape[-1 if _last(k) else 1]
    return {"X@GRAD": _channel_shuffle(dout, channels // groups, _last(k))}   # the inverse: C/g groups of g


# ---------------------------------------------------------------- unfold / fold
def _geometry(k, sizes):
    pads, out = ops.window_geometry({name: k.attr(name) for name in ops.WINDOW_ATTRS}, sizes)
    return Geometry(tuple(k.attr("strides")), tuple(pads), tuple(k.attr("dilations")), 1), out


def _unfold(x, k):
    geo, _ = _geometry(k, x.shape[2:])
    cols, out = im2col(x, k.attr("kernel_sizes"), geo)          # [1, C * kh * kw, N * L]
    return cols[0].reshape(cols.shape[1], x.shape[0], -1).transpose(1, 0, 2)


def _fold(x, k, sizes):
    geo, out = _geometry(k, sizes)
    n, kh, kw = x.shape[0], *k.attr("kernel_sizes")
    cols = x.reshape(n, -1, kh, kw, *out).transpose(1, 2, 3, 0, 4, 5)   # [C, kh, kw, N, out_h, out_w]
    return col2im(cols, sizes, geo)


def _x4(k):
    x = k.x("X")
    if x.ndim != 4:
        raise ValueError(f"X must be 4-D [N, C, H, W], got shape {list(x.shape)}")
    return x


@kernel("unfold")
def unfold(k):
    return {"Y": _unfold(_x4(k), k)}


@kernel("unfold_grad")
def unfold_grad(k):
    x = _x4(k)
    return {"X@GRAD": _fold(k.x("Y@GRAD"), k, list(x.shape[2:]))}


def _fold_attrs(k, x):
    ops.fold_check({name: k.attr(name) for name in [*ops.WINDOW_ATTRS, "output_sizes"]}, list(x.shape))
    return list(k.attr("output_sizes"))


@kernel("fold")
def fold(k):
    x = k.x("X")
    return {"Y": _fold(x, k, _fold_attrs(k, x))}


@kernel("fold_grad")
def fold_grad(k):
    x = k.x("X")
    _fold_attrs(k, x)
    return {"X@GRAD": _unfold(k.x("Y@GRAD"), k).reshape(x.shape)}

