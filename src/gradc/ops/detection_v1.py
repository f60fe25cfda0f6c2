"""Paddle 1.x vision layers still held by older PaddleDetection / PaddleOCR programs: affine_channel (a frozen
batch norm: X * Scale + Bias per channel), shuffle_channel (ShuffleNet's channel shuffle) and
add_position_encoding (the Transformer's sinusoid added to a sequence's features). The Paddle 1.x detection ops of
the same programs are in gradc.ops.detection_v1_boxes and detection_v1_nms.

affine_channel's channel is dim 1 for data_layout NCHW and the last dim for any other layout (its default,
AnyLayout, included), as Paddle's kernel reads it. add_position_encoding's X is [N, L, P], or [total, P] packed
sequences whose LoD tells each row's position (the kernel requires that LoD).

Where Paddle 3.3.1 is wrong: shuffle_channel_grad shuffles dOut forward again instead of undoing the shuffle, a
wrong gradient unless group^2 equals the channel count (the shuffle is then its own inverse); and its float64
shuffle_channel kernels copy sizeof(int) bytes per value, half of each channel. gradc gives the inverse shuffle
and moves whole float64 values.
"""

from __future__ import annotations

from ..registry import defop, grad_op
from .infer import check_float


def _affine_channel_infer(ctx):
    x = ctx.shape("X")
    check_float(ctx, "X")
    if x is not None and len(x) < 2:
        ctx.fail(f"X must be at least 2-D [N, C, ...], got shape {x}")
    channels = -1 if x is None else x[1] if ctx.attr("data_layout") == "NCHW" else x[-1]
    for slot in ("Scale", "Bias"):
        shape = ctx.shape(slot)
        if shape is not None and (len(shape) != 1 or -1 not in (shape[0], channels) and shape[0] != channels):
            ctx.fail(f"{slot} must be [C] = [{channels}] (one value per channel of X {x}), got shape {shape}")
    return {"Out": (x, ctx.dtype("X"))}


defop("affine_channel", ["X", "Scale", "Bias"], infer=_affine_channel_infer, attrs={"data_layout": "AnyLayout"},
      grad=grad_op("X", "Scale", "Bias"))


def _shuffle_channel_infer(ctx):
    x = ctx.shape("X")
    if x is not None and len(x) != 4:
        ctx.fail(f"X must be 4-D [N, C, H, W], got shape {x}")
    group = ctx.attr("group")
    if group < 1:
        ctx.fail(f"group must be >= 1, got {group}")
    if x is not None and x[1] >= 0 and x[1] % group:
        ctx.fail(f"X's {x[1]} channels do not divide into {group} groups")
    return {"Out": (x, ctx.dtype("X"))}


defop("shuffle_channel", ["X"], infer=_shuffle_channel_infer, attrs={"group": 1}, grad=grad_op())


def _add_position_encoding_infer(ctx):
    x = ctx.shape("X")
    check_float(ctx, "X")
    if x is not None and len(x) not in (2, 3):
        ctx.fail(f"X must be 3-D [N, L, P] (or 2-D packed sequences with a LoD), got shape {x}")
    if x is not None and x[-1] >= 0 and x[-1] % 2:
        ctx.fail(f"X's feature size {x[-1]} must be even (sines, then cosines)")
    return {"Out": (x, ctx.dtype("X"))}


defop("add_position_encoding", ["X"], infer=_add_position_encoding_infer, attrs={"alpha": 1.0, "beta": 1.0},
      grad=grad_op("X"))
