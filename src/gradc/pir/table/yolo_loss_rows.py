"""Rows: YOLOv3's loss (gradc.ops.yolo_loss). PIR's yolo_loss_grad names the gt grads as the legacy op does; Paddle
computes none of them. PIR types gt_match_mask float32; its values are int32 anchor slots."""

from __future__ import annotations

from . import row
from .hooks import int32_output

ATTRS = ("anchors:i32s anchor_mask:i32s class_num:i32 ignore_thresh:f32 downsample_ratio:i32 use_label_smooth:bool "
         "scale_x_y:f32")
GT = "gt_box:GTBox gt_label:GTLabel gt_score?:GTScore"

ROWS = [
    row("pd_op.yolo_loss", "yolov3_loss", f"x:X {GT}", "loss:Loss objectness_mask:ObjectnessMask "
        "gt_match_mask:GTMatchMask", ATTRS, hook=int32_output("GTMatchMask")),
    row("pd_op.yolo_loss_grad", "yolov3_loss_grad", f"x:X {GT} objectness_mask:ObjectnessMask "
        "gt_match_mask:GTMatchMask loss_grad:Loss@GRAD", "x_grad:X@GRAD gt_box_grad:GTBox@GRAD "
        "gt_label_grad:GTLabel@GRAD gt_score_grad:GTScore@GRAD", ATTRS),
]
