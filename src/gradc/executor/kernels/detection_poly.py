"""IoUs of polygon boxes, for multiclass_nms3 (and multiclass_nms) over BBoxes of 8, 16, 24 or 32 coordinates: a
rotated detector's (PP-YOLOE-R, S2ANet, FCOSR) 4-point boxes [x1, y1, ..., x4, y4]. Paddle clips them with its gpc
library; gradc takes them convex (a rotated rectangle is), where the intersection is the convex hull of each one's
corners inside the other and their edges' crossings. As in Paddle's PolyIoU, a polygon of no area overlaps nothing,
and `normalized` changes nothing (no pixel offset). Computed in float64 and returned in the boxes' dtype."""

from __future__ import annotations

import numpy as np


def _signed_areas(points: np.ndarray) -> np.ndarray:
    """Shoelace areas of [..., V, 2] polygons: > 0 counter-clockwise."""
    x, y = points[..., 0], points[..., 1]
    return 0.5 * (x * np.roll(y, -1, axis=-1) - np.roll(x, -1, axis=-1) * y).sum(-1)


def _counter_clockwise(boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[L, V, 2] float64 corners of [L, 2V] boxes, counter-clockwise, and their areas; convex or refused."""
    points = boxes.astype(np.float64).reshape(len(boxes), -1, 2)
    areas = _signed_areas(points)
    points = np.where((areas < 0)[:, None, None], points[:, ::-1], points)
    edges = np.roll(points, -1, axis=1) - points
    turns = edges[..., 0] * np.roll(edges[..., 1], -1, axis=1) - edges[..., 1] * np.roll(edges[..., 0], -1, axis=1)
    scale = np.abs(edges).max(axis=(1, 2)) ** 2
    if (turns < -1e-9 * scale[:, None]).any():
        raise ValueError("gradc's polygon NMS takes convex polygons (rotated boxes); a box here is not convex")
    return points, np.abs(areas)


def _inside(points: np.ndarray, polygons: np.ndarray) -> np.ndarray:
    """[L, P] whether each of [L, P, 2] points is inside or on [L, V, 2] counter-clockwise convex polygons."""
    edges = np.roll(polygons, -1, axis=1) - polygons                           # [L, V, 2]
    offsets = points[:, :, None, :] - polygons[:, None, :, :]                  # [L, P, V, 2]
    cross = edges[:, None, :, 0] * offsets[..., 1] - edges[:, None, :, 1] * offsets[..., 0]
    scale = np.abs(edges).max(axis=(1, 2))[:, None, None] ** 2
    return (cross >= -1e-12 * scale).all(-1)


def _crossings(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[L, Va * Vb, 2] points where the edges of polygons a and b cross, NaN where they do not."""
    p, d = a[:, :, None, :], (np.roll(a, -1, axis=1) - a)[:, :, None, :]
    q, e = b[:, None, :, :], (np.roll(b, -1, axis=1) - b)[:, None, :, :]
    qp = q - p
    denom = d[..., 0] * e[..., 1] - d[..., 1] * e[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (qp[..., 0] * e[..., 1] - qp[..., 1] * e[..., 0]) / denom
        u = (qp[..., 0] * d[..., 1] - qp[..., 1] * d[..., 0]) / denom
        hit = (denom != 0) & (t >= 0) & (t <= 1) & (u >= 0) & (u <= 1)
        points = p + np.where(hit, t, 0)[..., None] * d
    return np.where(hit[..., None], points, np.nan).reshape(len(a), -1, 2)


def polygon_ious(boxes: np.ndarray, others: np.ndarray) -> np.ndarray:
    """[K, L] IoUs of [K, 2V] and [L, 2V] convex polygon boxes."""
    if not len(boxes) or not len(others):
        return np.zeros((len(boxes), len(others)), boxes.dtype)
    mine, my_areas = _counter_clockwise(boxes)
    theirs, their_areas = _counter_clockwise(others)
    result = np.zeros((len(boxes), len(others)), np.float64)
    for row, (polygon, area) in enumerate(zip(mine, my_areas)):
        a = np.broadcast_to(polygon, (len(others), *polygon.shape))
        candidates = np.concatenate([np.where(_inside(a, theirs)[..., None], a, np.nan),
                                     np.where(_inside(theirs, a)[..., None], theirs, np.nan),
                                     _crossings(a, theirs)], axis=1)          # [L, P, 2], NaN: not a corner
        valid = ~np.isnan(candidates[..., 0])
        with np.errstate(invalid="ignore"):
            centre = np.nan_to_num(candidates).sum(1, keepdims=True) / valid.sum(1)[:, None, None]
        angles = np.where(valid, np.arctan2(*(candidates - centre).transpose(2, 0, 1)[::-1]), np.inf)
        order = np.argsort(angles, axis=1)
        hull = np.take_along_axis(candidates, order[..., None], axis=1)
        first = hull[:, :1]
        hull = np.where(np.isnan(hull), first, hull)   # the unused slots repeat the first corner: no area
        inter = np.where(valid.sum(1) >= 3, np.abs(np.nan_to_num(_signed_areas(hull))), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = inter / (area + their_areas - inter)
        result[row] = np.where((area == 0) | (their_areas == 0) | (inter == 0), 0.0, iou)
    return result.astype(boxes.dtype)
