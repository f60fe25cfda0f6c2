"""Rows: deformable convolution (gradc.ops.deform_conv). PIR has one op for both legacy ones,
pd_op.deformable_conv, whose mask is null for v1: a null mask imports as deformable_conv_v1 (whose grad has no
Mask@GRAD), and EXPORTS writes deformable_conv_v1 and its grad as pd_op.deformable_conv(_grad) with a null mask."""

from __future__ import annotations

from . import row

DEFORM_ATTRS = "strides:i32s paddings:i32s dilations:i32s deformable_groups:i32 groups:i32 im2col_step:i32"
GRADS = "x_grad:Input@GRAD offset_grad:Offset@GRAD filter_grad:Filter@GRAD"


def _unmasked(legacy, op, ctx) -> None:
    """Without a mask, the op is v1 (legacy deformable_conv's Mask is not optional)."""
    if not legacy.input("Mask"):
        legacy.type = legacy.type.replace("deformable_conv", "deformable_conv_v1")
        legacy.inputs.pop("Mask", None)
        legacy.outputs.pop("Mask@GRAD", None)


ROWS = [
    row("pd_op.deformable_conv", "deformable_conv", "x:Input offset:Offset filter:Filter mask?:Mask", "out:Output",
        DEFORM_ATTRS, hook=_unmasked),
    row("pd_op.deformable_conv_grad", "deformable_conv_grad",
        "x:Input offset:Offset filter:Filter mask?:Mask out_grad:Output@GRAD", f"{GRADS} mask_grad:Mask@GRAD",
        DEFORM_ATTRS, hook=_unmasked),
]

# export-only: v1 is the PIR op with a null mask
EXPORTS = [
    row("pd_op.deformable_conv", "deformable_conv_v1", "x:Input offset:Offset filter:Filter mask:-", "out:Output",
        DEFORM_ATTRS),
    row("pd_op.deformable_conv_grad", "deformable_conv_v1_grad",
        "x:Input offset:Offset filter:Filter mask:- out_grad:Output@GRAD", f"{GRADS} mask_grad:-", DEFORM_ATTRS),
]
