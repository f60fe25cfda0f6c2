"""Rotated-box IoU and NMS, the custom ops of Paddle3D (paddle3d/ops/iou3d_nms: PointPillars, CenterPoint, PV-RCNN
post-processing) and PaddleDetection (ppdet/ext_op: rotated detectors), under the suites' names. Forward only: none
has a gradient (the suites define none).

Paddle3D's boxes are [..., 7] (x, y, z, dx, dy, dz, heading), their bird's-eye-view rectangle centred at (x, y),
dx along the heading, dy across, turned counterclockwise by the heading:

    boxes_iou_bev_cpu, boxes_iou_bev_gpu  (boxes_a_tensor, " boxes_b_tensor": the suite's slot name has the space)
                        -> ans_iou_tensor [Na, Nb] = overlap / max(area_a + area_b - overlap, 1e-8)
    boxes_overlap_bev_gpu (boxes_a, " boxes_b") -> ans_overlap [Na, Nb], the overlap area
    nms_gpu, nms_normal_gpu (boxes, already in score order) -> keep [N] (the kept boxes' indices first, zeros after),
                        num_to_keep [1]: a box is kept unless a kept box before it overlaps it by IoU >
                        nms_overlap_thresh; nms_normal_gpu's IoU ignores the heading (axis-aligned rectangles)

    points_in_boxes_gpu (pts_tensor [B, N, 3], boxes_tensor [B, M, 7]) -> box_idx_of_points [B, N] int32: the first
                        box holding the point (|z - cz| <= dz / 2, and in the box's frame |x| < dx / 2 + 1e-5,
                        |y| < dy / 2 + 1e-5), -1 for none (roiaware_pool3d's one op)

PaddleDetection's rboxes are [N, 5] (x, y, w, h, angle in radians, counterclockwise); a box narrower than 0.01
has IoU 0:

    rbox_iou (RBox1, RBox2) -> Output [N1, N2];  matched_rbox_iou (RBOX1, RBOX2) -> Output [N], row by row
    nms_rotated (Boxes, Scores; threshold) -> Output [kept] int64: boxes in descending score order (ties in index
                        order), each kept unless a kept box overlaps it by IoU > threshold

The overlap is the exact intersection of two convex polygons (clipping), computed in float64; the suites' kernels
find the same polygon by edge intersections and sorting, in float32 (Paddle3D) or the boxes' dtype.
The Paddle3D NMS ops declare int64 keep and num_to_keep, but their kernels write int32: gradc writes the declared
int64.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop
from ..shapes import dims_match
from .infer import check_float, one_dtype

# Paddle3D's BEV IoU ops: type -> (its two input slots, its output slot)
BEV_PAIRS = {"boxes_iou_bev_cpu": ("boxes_a_tensor", " boxes_b_tensor", "ans_iou_tensor"),
             "boxes_iou_bev_gpu": ("boxes_a_tensor", " boxes_b_tensor", "ans_iou_tensor"),
             "boxes_overlap_bev_gpu": ("boxes_a", " boxes_b", "ans_overlap")}
RBOX_PAIRS = {"rbox_iou": ("RBox1", "RBox2", "Output"), "matched_rbox_iou": ("RBOX1", "RBOX2", "Output")}


def _boxes(ctx, slot: str, width: int) -> list[int] | None:
    check_float(ctx, slot)
    shape = ctx.shape(slot)
    if shape is not None and (len(shape) != 2 or not dims_match(shape[1], width)):
        ctx.fail(f"{ctx.op.type} needs {slot.strip()} [boxes, {width}], got {shape}")
    return shape


def _pair_infer(ctx):
    first, second, out = {**BEV_PAIRS, **RBOX_PAIRS}[ctx.op.type]
    width = 5 if ctx.op.type in RBOX_PAIRS else 7
    a, b = _boxes(ctx, first, width), _boxes(ctx, second, width)
    dtype = one_dtype(ctx, first, second)
    if ctx.op.type == "matched_rbox_iou":
        if a is not None and b is not None and not dims_match(a[0], b[0]):
            ctx.fail(f"matched_rbox_iou needs RBOX1 {a} and RBOX2 {b} of as many boxes")
        return {out: (None if a is None else [a[0]], dtype)}
    return {out: (None if a is None or b is None else [a[0], b[0]], dtype)}


for _type, (_first, _second, _out) in {**BEV_PAIRS, **RBOX_PAIRS}.items():
    defop(_type, [_first, _second], [_out], infer=_pair_infer, grad=NO_GRAD)


def _nms_infer(ctx):
    boxes = _boxes(ctx, "boxes", 7)
    return {"keep": (None if boxes is None else [boxes[0]], VarType.INT64), "num_to_keep": ([1], VarType.INT64)}


for _type in ("nms_gpu", "nms_normal_gpu"):
    defop(_type, ["boxes"], ["keep", "num_to_keep"], attrs={"nms_overlap_thresh": 0.0}, infer=_nms_infer,
          grad=NO_GRAD)


def _nms_rotated_infer(ctx):
    boxes, scores = _boxes(ctx, "Boxes", 5), ctx.shape("Scores")
    if scores is not None and (len(scores) != 1 or (boxes is not None and not dims_match(scores[0], boxes[0]))):
        ctx.fail(f"nms_rotated needs Scores [boxes] for Boxes {boxes}, got {scores}")
    return {"Output": ([-1], VarType.INT64)}


defop("nms_rotated", ["Boxes", "Scores"], ["Output"], attrs={"threshold": 0.0}, infer=_nms_rotated_infer,
      grad=NO_GRAD)


def _points_in_boxes_infer(ctx):
    check_float(ctx, "pts_tensor")
    points, boxes = ctx.shape("pts_tensor"), ctx.shape("boxes_tensor")
    if points is not None and (len(points) != 3 or not dims_match(points[2], 3)):
        ctx.fail(f"points_in_boxes_gpu needs pts_tensor [batch, points, 3], got {points}")
    if boxes is not None and (len(boxes) != 3 or not dims_match(boxes[2], 7) or (
            points is not None and not dims_match(boxes[0], points[0]))):
        ctx.fail(f"points_in_boxes_gpu needs boxes_tensor [batch, boxes, 7] for pts_tensor {points}, got {boxes}")
    return {"box_idx_of_points": (None if points is None else points[:2], VarType.INT32)}


defop("points_in_boxes_gpu", ["pts_tensor", "boxes_tensor"], ["box_idx_of_points"], infer=_points_in_boxes_infer,
      grad=NO_GRAD)
