"""Padding ops: pad (constant, every dim) and pad3d (four modes over the 3 spatial dims of a 5-D tensor).

pad's `paddings` always hold a (before, after) pair per dim from the first dim: paddle.nn.functional.pad
reorders and extends the user's list (its `pad_from_left_axis` argument) before it appends the op.
"""

from __future__ import annotations

from ..registry import defop, grad_op


def pad_pairs(paddings) -> list[tuple[int, int]]:
    """pad's flat [before0, after0, before1, after1, ...] as (before, after) per dim."""
    return [(paddings[2 * i], paddings[2 * i + 1]) for i in range(len(paddings) // 2)]


def padded_dims(ctx, x: list[int], pairs) -> list[int]:
    """X's dims with each (before, after) pair added; a dim padded below zero fails."""
    out = [-1 if d < 0 else d + a + b for d, (a, b) in zip(x, pairs)]
    if any(d < -1 or (d == -1 and x[i] >= 0) for i, d in enumerate(out)):
        ctx.fail(f"{ctx.op.type}: paddings {list(pairs)} cut more than the whole of {x}")
    return out


def _pad_infer(ctx):
    x = ctx.shape("X")
    paddings = list(ctx.attr("paddings"))
    if len(paddings) != 2 * len(x):
        ctx.fail(f"pad needs 2 * rank = {2 * len(x)} paddings (before, after per dim of {x}), got {paddings}")
    if any(p < 0 for p in paddings):
        ctx.fail(f"pad paddings must be >= 0, got {paddings}")
    return {"Out": (padded_dims(ctx, x, pad_pairs(paddings)), ctx.dtype("X"))}


defop("pad", ["X"], attrs={"paddings": [], "pad_value": 0.0}, infer=_pad_infer, grad=grad_op(),
      tensor_attrs=["pad_value"])

PAD3D_MODES = ("constant", "reflect", "replicate", "circular")


def pad3d_pairs(paddings, data_format: str) -> list[tuple[int, int]]:
    """pad3d's [left, right, top, bottom, front, back] as (before, after) per dim of a 5-D tensor. A negative
    padding crops, in every mode."""
    left, right, top, bottom, front, back = paddings
    spatial = [(front, back), (top, bottom), (left, right)]
    return [(0, 0), (0, 0)] + spatial if data_format == "NCDHW" else [(0, 0)] + spatial + [(0, 0)]


def _pad3d_infer(ctx):
    x = ctx.shape("X")
    if len(x) != 5:
        ctx.fail(f"pad3d needs a 5-D input, got {x}")
    if ctx.attr("mode") not in PAD3D_MODES:
        ctx.fail(f"pad3d mode {ctx.attr('mode')!r} is not one of {PAD3D_MODES}")
    if ctx.attr("data_format") not in ("NCDHW", "NDHWC"):
        ctx.fail(f"pad3d data_format {ctx.attr('data_format')!r} is not NCDHW or NDHWC")
    if ctx.has("Paddings"):   # the pads are known at run time only
        spatial = [2, 3, 4] if ctx.attr("data_format") == "NCDHW" else [1, 2, 3]
        return {"Out": ([-1 if i in spatial else d for i, d in enumerate(x)], ctx.dtype("X"))}
    paddings = list(ctx.attr("paddings"))
    if len(paddings) != 6:
        ctx.fail(f"pad3d needs 6 paddings [left, right, top, bottom, front, back], got {paddings}")
    pairs = pad3d_pairs(paddings, ctx.attr("data_format"))
    if ctx.attr("mode") == "reflect" and any(max(a, b) >= d >= 0 for d, (a, b) in zip(x, pairs)):
        ctx.fail(f"pad3d reflect paddings {paddings} must be smaller than the dims they pad in {x}")
    return {"Out": (padded_dims(ctx, x, pairs), ctx.dtype("X"))}


defop("pad3d", ["X", "Paddings?"], attrs={"paddings": [0] * 6, "mode": "constant", "value": 0.0,
                                         "data_format": "NCDHW"},
      no_grad_inputs=["Paddings"], infer=_pad3d_infer, grad=grad_op("X", "Paddings"))
