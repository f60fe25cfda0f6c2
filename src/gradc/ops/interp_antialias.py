"""interp_antialias: F.interpolate(antialias=True) of a 4-D tensor, bilinear or bicubic (PIR mode only: Paddle's
legacy API drops antialias). Slots and attributes as Paddle's op (x, out_size, size_tensor, scale_tensor ->
output; data_format); the output size as gradc.ops.interp's resizes. Each spatial axis is resampled with a filter
widened by the ratio when shrinking (the triangle of width 2, or the cubic of a = -0.5 and width 4, times the
input pixels per output pixel), its taps normalised to sum 1: Pillow's and PyTorch's antialiased resize. It is
linear in x, so the grad op applies the transposed weights to output@GRAD, and the grad op's own derivative is
the forward (gradc.ops.composite.linear).
"""

from __future__ import annotations

from ..ir import AttrType
from ..registry import defgrad, defop, grad_op, typed
from .composite import linear
from .interp import check_attrs, plan, split_layout

SIZE_SLOTS = ("out_size", "size_tensor", "scale_tensor")
METHODS = ("bilinear", "bicubic")
ATTRS = {"data_format": "NCHW", "out_d": 0, "out_h": 0, "out_w": 0, "scale": typed([], AttrType.FLOAT64S),
         "interp_method": "bilinear", "align_corners": True, "align_mode": 1}


def attr_of(attr):
    """The op's attributes under the names gradc.ops.interp's rules read (data_layout: data_format)."""
    def read(name: str):
        return attr("data_format" if name == "data_layout" else name)
    return read


def check(attr, rank: int) -> None:
    if attr("interp_method") not in METHODS:
        raise ValueError(f"interp_antialias resamples bilinear or bicubic, not {attr('interp_method')!r}")
    check_attrs(attr, rank)


def _infer(ctx):
    x, attr = ctx.shape("x"), attr_of(ctx.attr)
    if x is None:
        return {"output": (None, ctx.dtype("x"))}
    try:
        check(attr, len(x))
        n, c, sizes = split_layout(x, attr("data_layout"))
        out = [-1] * len(sizes) if any(ctx.has(slot) for slot in SIZE_SLOTS) else plan(attr, sizes).sizes
    except ValueError as err:
        ctx.fail(str(err))
    shape = [n, *out, c] if attr("data_layout") == "NHWC" else [n, c, *out]
    return {"output": (shape, ctx.dtype("x"))}


defop("interp_antialias", ["x", "out_size?", "size_tensor[]?", "scale_tensor?"], ["output"], attrs=ATTRS,
      infer=_infer, no_grad_inputs=SIZE_SLOTS, grad=grad_op("x", *SIZE_SLOTS))
defgrad("interp_antialias_grad", grad=linear("interp_antialias", x="x", out="output", passed=SIZE_SLOTS),
        no_grad_inputs=["x", *SIZE_SLOTS])
