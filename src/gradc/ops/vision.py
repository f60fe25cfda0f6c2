"""Rearranging vision ops: pixel_shuffle, pixel_unshuffle, channel_shuffle (nn.PixelShuffle, PixelUnshuffle,
ChannelShuffle) and unfold/fold (nn.Unfold, nn.Fold: im2col and its adjoint).

The shuffles are permutations, so their grad ops read only Out@GRAD. unfold's paddings are Paddle's
[top, left, bottom, right]; Y is [N, C * kh * kw, L] with L = out_h * out_w, channels major, then kernel rows.
fold reads them the same way (Paddle 3.3.1 counts fold's windows with paddings[0] and [1] on both sides and
rejects paddings that disagree, so the two agree wherever Paddle runs).
"""

from __future__ import annotations

from ..registry import defop, grad_op
from .conv import conv_out_sizes
from .interp import split_layout


def _four_d(ctx):
    x = ctx.shape("X")
    if len(x) != 4:
        ctx.fail(f"X must be 4-D, got shape {x}")
    if ctx.attr("data_format") not in ("NCHW", "NHWC"):
        ctx.fail(f"data_format {ctx.attr('data_format')!r} is not NCHW or NHWC")
    return split_layout(x, ctx.attr("data_format"))


def _join(ctx, n, c, sizes):
    return [n, *sizes, c] if ctx.attr("data_format") == "NHWC" else [n, c, *sizes]


def _factor(ctx, name: str) -> int:
    factor = ctx.attr(name)
    if factor < 1:
        ctx.fail(f"{name} must be >= 1, got {factor}")
    return factor


def _pixel_shuffle_infer(ctx):
    n, c, (h, w) = _four_d(ctx)
    r = _factor(ctx, "upscale_factor")
    if c >= 0 and c % (r * r):
        ctx.fail(f"the {c} channels do not divide by upscale_factor^2 = {r * r}")
    return {"Out": (_join(ctx, n, -1 if c < 0 else c // (r * r), [h * r if h >= 0 else -1, w * r if w >= 0 else -1]),
                    ctx.dtype("X"))}


def _pixel_unshuffle_infer(ctx):
    n, c, (h, w) = _four_d(ctx)
    r = _factor(ctx, "downscale_factor")
    if any(size >= 0 and size % r for size in (h, w)):
        ctx.fail(f"the spatial sizes {[h, w]} do not divide by downscale_factor {r}")
    return {"Out": (_join(ctx, n, -1 if c < 0 else c * r * r, [s // r if s >= 0 else -1 for s in (h, w)]),
                    ctx.dtype("X"))}


def _channel_shuffle_infer(ctx):
    _, c, _ = _four_d(ctx)
    groups = _factor(ctx, "groups")
    if c >= 0 and c % groups:
        ctx.fail(f"the {c} channels do not divide into {groups} groups")
    return {"Out": (ctx.shape("X"), ctx.dtype("X"))}


defop("pixel_shuffle", ["X"], attrs={"upscale_factor": 1, "data_format": "NCHW"}, infer=_pixel_shuffle_infer,
      grad=grad_op())
defop("pixel_unshuffle", ["X"], attrs={"downscale_factor": 1, "data_format": "NCHW"}, infer=_pixel_unshuffle_infer,
      grad=grad_op())
defop("channel_shuffle", ["X"], attrs={"groups": 1, "data_format": "NCHW"}, infer=_channel_shuffle_infer,
      grad=grad_op())


# ---------------------------------------------------------------- unfold / fold
def window_geometry(attrs, sizes):
    """(pads [top, bottom, left, right], output sizes) of unfold/fold's sliding windows over ``sizes``."""
    names = ("kernel_sizes", "strides", "dilations")
    for name in names:
        if len(attrs[name]) != 2 or min(attrs[name]) < 1:
            raise ValueError(f"{name} must be two values >= 1, got {attrs[name]}")
    if len(attrs["paddings"]) != 4 or min(attrs["paddings"]) < 0:
        raise ValueError(f"paddings must be four values >= 0 [top, left, bottom, right], got {attrs['paddings']}")
    top, left, bottom, right = attrs["paddings"]
    pads = [top, bottom, left, right]
    out = conv_out_sizes(sizes, attrs["kernel_sizes"], attrs["strides"], pads, attrs["dilations"])
    if any(size >= 0 and o < 1 for size, o in zip(sizes, out)):
        raise ValueError(f"the windows give no output for input sizes {list(sizes)}")
    return pads, out


WINDOW_ATTRS = {"kernel_sizes": [1, 1], "strides": [1, 1], "paddings": [0, 0, 0, 0], "dilations": [1, 1]}


def _attrs(ctx, names):
    return {name: ctx.attr(name) for name in names}


def _unfold_infer(ctx):
    x = ctx.shape("X")
    if len(x) != 4:
        ctx.fail(f"X must be 4-D [N, C, H, W], got shape {x}")
    try:
        _, (oh, ow) = window_geometry(_attrs(ctx, WINDOW_ATTRS), x[2:])
    except ValueError as err:
        ctx.fail(str(err))
    kh, kw = ctx.attr("kernel_sizes")
    channels = -1 if x[1] < 0 else x[1] * kh * kw
    return {"Y": ([x[0], channels, -1 if oh < 0 or ow < 0 else oh * ow], ctx.dtype("X"))}


def fold_check(attrs, x_shape):
    """fold's output sizes' windows must give X's [N, C * kh * kw, L]: the channels and L they imply."""
    if len(attrs["output_sizes"]) != 2 or min(attrs["output_sizes"]) < 1:
        raise ValueError(f"output_sizes must be two values >= 1, got {attrs['output_sizes']}")
    _, (oh, ow) = window_geometry(attrs, attrs["output_sizes"])
    kh, kw = attrs["kernel_sizes"]
    if len(x_shape) != 3:
        raise ValueError(f"X must be 3-D [N, C * kh * kw, L], got shape {list(x_shape)}")
    if x_shape[1] >= 0 and x_shape[1] % (kh * kw):
        raise ValueError(f"X's {x_shape[1]} channels do not divide by the kernel's {kh} x {kw} cells")
    if x_shape[2] >= 0 and x_shape[2] != oh * ow:
        raise ValueError(f"X has {x_shape[2]} windows, but output_sizes {attrs['output_sizes']} give {oh} x {ow}")
    return -1 if x_shape[1] < 0 else x_shape[1] // (kh * kw)


def _fold_infer(ctx):
    x = ctx.shape("X")
    try:
        channels = fold_check(_attrs(ctx, [*WINDOW_ATTRS, "output_sizes"]), x)
    except ValueError as err:
        ctx.fail(str(err))
    return {"Y": ([x[0], channels, *ctx.attr("output_sizes")], ctx.dtype("X"))}


defop("unfold", ["X"], ["Y"], attrs=WINDOW_ATTRS, infer=_unfold_infer, grad=grad_op("X"))
defop("fold", ["X"], ["Y"], attrs={"output_sizes": [1, 1], **WINDOW_ATTRS}, infer=_fold_infer, grad=grad_op("X"))
