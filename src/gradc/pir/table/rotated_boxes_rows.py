"""Rows: the suites' rotated-box IoU and NMS (gradc.ops.rotated_boxes), custom_op dialect, operands and results named
as the suites' slots (Paddle3D's second slot name begins with a space, as its PD_BUILD_OP spells it)."""

from __future__ import annotations

from ...ops.rotated_boxes import BEV_PAIRS, RBOX_PAIRS
from . import row

ROWS = [
    *(row(f"custom_op.{op}", op, f"{first}:{first} {second.strip()}:{second}", f"{out}:{out}")
      for op, (first, second, out) in {**BEV_PAIRS, **RBOX_PAIRS}.items()),
    *(row(f"custom_op.{op}", op, "boxes:boxes", "keep:keep num_to_keep:num_to_keep", "nms_overlap_thresh:f32")
      for op in ("nms_gpu", "nms_normal_gpu")),
    row("custom_op.points_in_boxes_gpu", "points_in_boxes_gpu", "pts_tensor:pts_tensor boxes_tensor:boxes_tensor",
        "box_idx_of_points:box_idx_of_points"),
    row("custom_op.nms_rotated", "nms_rotated", "Boxes:Boxes Scores:Scores", "Output:Output", "threshold:f32"),
]
