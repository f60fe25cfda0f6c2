"""Rows: the RoI pooling ops of paddle.vision.ops (gradc.ops.roi), forward and grad. PIR names the boxes
``boxes`` and their per-image counts ``boxes_num`` (the legacy ROIs and RoisNum)."""

from __future__ import annotations

from . import row

BOXES = "x:X boxes:ROIs boxes_num?:RoisNum"
POOLED = "pooled_height:i32 pooled_width:i32 spatial_scale:f32"
ALIGN = POOLED + " sampling_ratio:i32 aligned:bool"
PSROI = "pooled_height:i32 pooled_width:i32 output_channels:i32 spatial_scale:f32"
X_GRAD = "x_grad:X@GRAD"

ROWS = [
    row("pd_op.roi_align", "roi_align", BOXES, "out:Out", ALIGN),
    row("pd_op.roi_align_grad", "roi_align_grad", BOXES + " out_grad:Out@GRAD", X_GRAD, ALIGN),
    row("pd_op.roi_pool", "roi_pool", BOXES, "out:Out arg_max:Argmax", POOLED),
    row("pd_op.roi_pool_grad", "roi_pool_grad", BOXES + " arg_max:Argmax out_grad:Out@GRAD", X_GRAD, POOLED),
    row("pd_op.psroi_pool", "psroi_pool", BOXES, "out:Out", PSROI),
    row("pd_op.psroi_pool_grad", "psroi_pool_grad", BOXES + " out_grad:Out@GRAD", X_GRAD, PSROI),
]
