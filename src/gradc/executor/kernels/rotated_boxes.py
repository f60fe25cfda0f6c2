"""Kernels of gradc.ops.rotated_boxes (the suites' rotated-box IoU and NMS): each pair's overlap is box a's
rectangle clipped by box b's four edges (Sutherland-Hodgman, exact for convex polygons), its area by the shoelace
formula, in float64."""

from __future__ import annotations

import numpy as np

from ...ops.rotated_boxes import BEV_PAIRS, RBOX_PAIRS
from . import kernel

BEV_EPS = 1e-8   # Paddle3D's floor of the union
RBOX_MIN_SIDE = 1e-2   # PaddleDetection: a narrower box has IoU 0


def corners(boxes: np.ndarray) -> np.ndarray:
    """[N, 4, 2] counterclockwise corners of (x, y, w, h, angle) rectangles."""
    x, y, w, h, angle = (boxes[:, i].astype(np.float64) for i in range(5))
    cos, sin = np.cos(angle), np.sin(angle)
    local = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5]])
    dx, dy = local[None, :, 0] * w[:, None], local[None, :, 1] * h[:, None]
    return np.stack([x[:, None] + dx * cos[:, None] - dy * sin[:, None],
                     y[:, None] + dx * sin[:, None] + dy * cos[:, None]], axis=-1)


def _clip(polygon: list, start: np.ndarray, end: np.ndarray) -> list:
    """The part of the polygon left of the directed edge start -> end."""
    edge = end - start
    side = [edge[0] * (p[1] - start[1]) - edge[1] * (p[0] - start[0]) for p in polygon]
    kept = []
    for i, point in enumerate(polygon):
        prev, prev_side = polygon[i - 1], side[i - 1]
        if (side[i] >= 0) != (prev_side >= 0):
            t = prev_side / (prev_side - side[i])
            kept.append(prev + t * (point - prev))
        if side[i] >= 0:
            kept.append(point)
    return kept


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    """The intersection area of two convex counterclockwise quadrilaterals [4, 2]."""
    polygon = list(a)
    for i in range(4):
        polygon = _clip(polygon, b[i], b[(i + 1) % 4])
        if len(polygon) < 3:
            return 0.0
    points = np.array(polygon)
    return 0.5 * abs(float(np.dot(points[:, 0], np.roll(points[:, 1], -1)) -
                           np.dot(points[:, 1], np.roll(points[:, 0], -1))))


def _rects(boxes: np.ndarray, bev: bool) -> np.ndarray:
    """(x, y, w, h, angle) of Paddle3D's 7-number boxes or PaddleDetection's 5-number ones."""
    return boxes[:, [0, 1, 3, 4, 6]] if bev else boxes


def iou(a: np.ndarray, b: np.ndarray, bev: bool) -> float:
    """IoU of two (x, y, w, h, angle) rows, as Paddle3D (``bev``) or PaddleDetection floor it."""
    inter = overlap(corners(a[None])[0], corners(b[None])[0])
    if bev:
        return inter / max(a[2] * a[3] + b[2] * b[3] - inter, BEV_EPS)
    if min(a[2], a[3], b[2], b[3]) < RBOX_MIN_SIDE:
        return 0.0
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


@kernel(*BEV_PAIRS, *RBOX_PAIRS)
def box_pairs(k):
    first, second, out = {**BEV_PAIRS, **RBOX_PAIRS}[k.op.type]
    bev = k.op.type in BEV_PAIRS
    a_boxes, b_boxes = k.x(first), k.x(second)
    a, b = _rects(a_boxes, bev).astype(np.float64), _rects(b_boxes, bev).astype(np.float64)
    if k.op.type == "matched_rbox_iou":
        if len(a) != len(b):
            raise ValueError(f"RBOX1 has {len(a)} boxes, RBOX2 {len(b)}")
        return {out: np.array([iou(p, q, False) for p, q in zip(a, b)], a_boxes.dtype)}
    if k.op.type == "boxes_overlap_bev_gpu":
        ca, cb = corners(a), corners(b)
        result = [[overlap(p, q) for q in cb] for p in ca]
    else:
        result = [[iou(p, q, bev) for q in b] for p in a]
    return {out: np.array(result, a_boxes.dtype).reshape(len(a), len(b))}


def _greedy(rects: np.ndarray, threshold: float, bev: bool) -> list[int]:
    """Indices kept by greedy NMS over boxes in the order given."""
    kept: list[int] = []
    for i in range(len(rects)):
        if all(iou(rects[j], rects[i], bev) <= threshold for j in kept):
            kept.append(i)
    return kept


@kernel("nms_gpu", "nms_normal_gpu")
def nms_bev(k):
    boxes = _rects(k.x("boxes"), True).astype(np.float64)
    if k.op.type == "nms_normal_gpu":
        boxes = boxes.copy()
        boxes[:, 4] = 0   # the axis-aligned IoU: heading ignored
    kept = _greedy(boxes, np.float32(k.attr("nms_overlap_thresh")), True)
    keep = np.zeros(len(boxes), np.int64)
    keep[:len(kept)] = kept
    return {"keep": keep, "num_to_keep": np.array([len(kept)], np.int64)}


@kernel("nms_rotated")
def nms_rotated(k):
    boxes, scores = k.x("Boxes"), np.asarray(k.x("Scores"))
    if scores.shape != (len(boxes),):
        raise ValueError(f"Scores {list(scores.shape)} does not give one score per box of Boxes {list(boxes.shape)}")
    order = np.argsort(-scores, kind="stable")
    kept = _greedy(boxes[order].astype(np.float64), np.float32(k.attr("threshold")), False)
    return {"Output": order[kept].astype(np.int64)}


@kernel("points_in_boxes_gpu")
def points_in_boxes(k):
    """In float32 as the suite's kernel: the point's offset turned by -heading into the box's frame."""
    points, boxes = k.x("pts_tensor").astype(np.float32), k.x("boxes_tensor").astype(np.float32)
    if len(points) != len(boxes):
        raise ValueError(f"pts_tensor has {len(points)} batches, boxes_tensor {len(boxes)}")
    offset = points[:, :, None, :] - boxes[:, None, :, :3]   # [B, N, M, 3]
    heading = -boxes[:, None, :, 6]
    cos, sin = np.cos(heading), np.sin(heading)
    local_x = offset[..., 0] * cos + offset[..., 1] * -sin
    local_y = offset[..., 0] * sin + offset[..., 1] * cos
    half = boxes[:, None, :, 3:6] / 2
    inside = ((np.abs(offset[..., 2]) <= half[..., 2]) & (np.abs(local_x) < half[..., 0] + np.float32(1e-5))
              & (np.abs(local_y) < half[..., 1] + np.float32(1e-5)))
    first = np.argmax(inside, axis=-1) if inside.shape[-1] else np.zeros(inside.shape[:2], np.int64)
    return {"box_idx_of_points": np.where(inside.any(-1), first, -1).astype(np.int32)}
