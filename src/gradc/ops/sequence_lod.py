"""Sequence ops over LoD tensors (gradc.executor.lod): Paddle 1.x/2.x's text layers, which paddle.static.nn still
builds. A LoD tensor is a [total_rows, ...] tensor whose rows the last LoD level groups into sequences.

- sequence_pool: one row per sequence: AVERAGE, SUM, SQRT (sum / sqrt(length)), MAX (MaxIndex: the absolute row
  of each maximum, the first one on ties; -1 for an empty sequence), LAST or FIRST. An empty sequence gives
  ``pad_value`` (and no gradient). Out keeps the LoD levels above the last one.
- sequence_softmax: a softmax over each sequence of a [rows] or [rows, 1] tensor. Paddle exponentiates without
  subtracting the maximum (inf, then NaN, past exp's range); gradc subtracts it: equal values where Paddle's
  are finite.
- sequence_conv: each row's context (contextLength rows from contextStart on, within its sequence; rows past
  either end are zeros, or rows of PaddingData with paddingTrainable) times Filter [contextLength * D, M].
- sequence_expand: each sequence of X (each row, without a LoD) repeated as many times as the sequence of Y's
  level ``ref_level`` at its index is long.
- lod_reset: X with a new LoD: Y's LoD, else Y's values as offsets, else ``target_lod``; ``append`` adds it
  below X's levels.
- im2sequence: image patches as sequences, one per image; Y holds each image's real [height, width] (divided
  by ``out_stride``, rounded up) and limits its patches to those. Paddle's grad ignores Y (a wrong gradient for
  images whose real size is smaller): gradc's grad is the adjoint of the forward it computes.
"""

from __future__ import annotations

from ..registry import defop, grad_op
from .infer import check_float

POOL_TYPES = ("AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST")


def _pool_infer(ctx):
    x = ctx.shape("X")
    check_float(ctx, "X")
    if ctx.attr("pooltype") not in POOL_TYPES:
        ctx.fail(f"pooltype {ctx.attr('pooltype')!r} is not one of {list(POOL_TYPES)}")
    if len(x) < 1:
        ctx.fail(f"X must have a dim of rows, got shape {x}")
    # MaxIndex is int32 whatever the program declares (Paddle's declare X's dtype and no shape)
    return {"Out": ([-1, *x[1:]], ctx.dtype("X")), "MaxIndex": (None, None)}


defop("sequence_pool", ["X"], ["Out", "MaxIndex"], attrs={"is_test": False, "pooltype": "AVERAGE", "pad_value": 0.0},
      infer=_pool_infer, no_grad_outputs=["MaxIndex"], grad=grad_op("X", "MaxIndex"),
      lod_levels=lambda ctx: {"Out": max(0, ctx.lod_level("X") - 1)},   # the levels above the pooled one
      kernel_dtype_outputs=["MaxIndex"])


def _softmax_infer(ctx):
    x = ctx.shape("X")
    check_float(ctx, "X")
    if not (len(x) == 1 or (len(x) == 2 and x[1] in (1, -1))):
        ctx.fail(f"X must have shape [rows] or [rows, 1], got {x}")
    return {"Out": (x, ctx.dtype("X"))}


defop("sequence_softmax", ["X"], infer=_softmax_infer, grad=grad_op("X", "Out"))


def context_pads(context_start: int, context_length: int) -> tuple[int, int]:
    """(rows of PaddingData before a sequence, rows after it): Paddle's up_pad and down_pad."""
    return max(0, -context_start), max(0, context_start + context_length - 1)


def _conv_infer(ctx):
    x, w = ctx.shape("X"), ctx.shape("Filter")
    check_float(ctx, "X")
    length, start, stride = ctx.attr("contextLength"), ctx.attr("contextStart"), ctx.attr("contextStride")
    if length < 1:
        ctx.fail(f"contextLength must be at least 1, got {length}")
    if stride != 1:
        ctx.fail(f"contextStride must be 1 (Paddle supports no other), got {stride}")
    if len(x) != 2 or len(w) != 2:
        ctx.fail(f"X must be 2-D [rows, width] and Filter 2-D [contextLength * width, size], got {x} and {w}")
    if min(x[1], w[0]) >= 0 and w[0] != length * x[1]:
        ctx.fail(f"Filter has {w[0]} rows, not contextLength {length} times X's width {x[1]}")
    if ctx.attr("paddingTrainable"):
        if not ctx.has("PaddingData"):
            ctx.fail("paddingTrainable needs PaddingData")
        up, down = context_pads(start, length)
        pad = ctx.shape("PaddingData")
        if len(pad) != 2 or any(a != b and -1 not in (a, b) for a, b in zip(pad, [up + down, x[1]])):
            ctx.fail(f"PaddingData must have shape [{up + down}, {x[1]}] (up {up} + down {down} rows), got {pad}")
    return {"Out": ([x[0], w[1]], ctx.dtype("X"))}


defop("sequence_conv", ["X", "PaddingData?", "Filter"],
      attrs={"contextLength": 0, "contextStart": 0, "contextStride": 1, "paddingTrainable": False},
      infer=_conv_infer, grad=grad_op("X", "PaddingData", "Filter"))


def _expand_infer(ctx):
    x = ctx.shape("X")
    check_float(ctx, "X")
    if ctx.lod_level("X") > 1:
        ctx.fail(f"X may have at most 1 LoD level, has {ctx.lod_level('X')}")
    return {"Out": ([-1, *x[1:]], ctx.dtype("X"))}


defop("sequence_expand", ["X", "Y"], attrs={"ref_level": -1}, infer=_expand_infer, no_grad_inputs=["Y"],
      grad=grad_op("X", "Y"), lod_levels=lambda ctx: {"Out": ctx.lod_level("X")})


def _reset_infer(ctx):
    if not ctx.has("Y") and not ctx.attr("target_lod"):
        ctx.fail("lod_reset needs Y or a target_lod")
    return {"Out": (ctx.shape("X"), ctx.dtype("X"))}


def _reset_levels(ctx) -> dict[str, int]:
    """A level below X's when appending; else Y's levels (Y with a LoD), else one."""
    return {"Out": ctx.lod_level("X") + 1 if ctx.attr("append") else max(1, ctx.lod_level("Y"))}


defop("lod_reset", ["X", "Y?"], attrs={"target_lod": [], "append": False}, infer=_reset_infer,
      no_grad_inputs=["Y"], grad=grad_op("X"), lod_levels=_reset_levels)


def im2sequence_size(size: int, kernel: int, pad_before: int, pad_after: int, stride: int) -> int:
    return (size + pad_before + pad_after - kernel) // stride + 1


def _im2sequence_infer(ctx):
    x = ctx.shape("X")
    check_float(ctx, "X")
    kernels, strides, paddings = ctx.attr("kernels"), ctx.attr("strides"), ctx.attr("paddings")
    if len(x) != 4:
        ctx.fail(f"X must be 4-D [N, C, H, W], got {x}")
    if len(kernels) != 2 or len(strides) != 2 or len(paddings) != 4 or len(ctx.attr("out_stride")) != 2:
        ctx.fail(f"kernels, strides and out_stride need 2 values and paddings 4, got {kernels}, {strides}, "
                 f"{ctx.attr('out_stride')} and {paddings}")
    if min(*kernels, *strides, *ctx.attr("out_stride")) < 1 or min(paddings) < 0:
        ctx.fail(f"kernels, strides and out_stride must be positive and paddings >= 0, got {kernels}, {strides}, "
                 f"{ctx.attr('out_stride')} and {paddings}")
    sizes = [im2sequence_size(x[2 + i], kernels[i], paddings[i], paddings[i + 2], strides[i]) for i in (0, 1)]
    if any(x[2 + i] >= 0 and sizes[i] < 1 for i in (0, 1)):
        ctx.fail(f"kernels {kernels} do not fit the padded image of {x[2:]} (paddings {paddings})")
    # rows: the patches of every image, known at run time (Paddle's compile-time rule declares N)
    return {"Out": ([-1, -1 if x[1] < 0 else x[1] * kernels[0] * kernels[1]], ctx.dtype("X"))}


defop("im2sequence", ["X", "Y?"], attrs={"kernels": [], "strides": [1, 1], "paddings": [0, 0, 0, 0],
                                         "out_stride": [1, 1]},
      infer=_im2sequence_infer, no_grad_inputs=["Y"], grad=grad_op("X", "Y"),
      lod_levels=lambda ctx: {"Out": 0})   # as Paddle declares it, though its value has a LoD
