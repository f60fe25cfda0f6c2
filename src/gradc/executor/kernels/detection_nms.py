"""Kernels of gradc.ops.detection_nms's suppressions: nms, matrix_nms, multiclass_nms3. IoUs are computed in the
boxes' dtype in Paddle's order of operations, so a box at a threshold is kept or dropped as Paddle decides; the
orders among equal scores are Paddle's (detection_sort)."""

from __future__ import annotations

import numpy as np

from ...ops.detection_nms import POLYGON_SIZES
from ..lod import SETS_LOD
from . import kernel
from .detection import attr32, exp
from .detection_poly import polygon_ious
from .detection_sort import partial_sort
from .detection_v1_boxes import image_spans

ROW_BLOCK = 1 << 22   # IoUs matrix_nms holds at once


def box_areas(boxes: np.ndarray, pixel) -> np.ndarray:
    """Areas of [..., 4] boxes, 0 for an inverted one; a pixel box (pixel = 1) counts both ends."""
    width, height = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    return np.where((width < 0) | (height < 0), 0, (width + pixel) * (height + pixel)).astype(boxes.dtype)


def ious(boxes: np.ndarray, others: np.ndarray, normalized: bool) -> np.ndarray:
    """[K, L] IoUs (Paddle's JaccardOverlap: 0 for boxes that do not touch) of [K, 4] and [L, 4] boxes."""
    pixel = boxes.dtype.type(0 if normalized else 1)
    x1, y1, x2, y2 = (boxes[:, i, None] for i in range(4))
    other_x1, other_y1, other_x2, other_y2 = others.T
    inter = np.minimum(x2, other_x2) - np.maximum(x1, other_x1) + pixel   # in place from here: K x L values
    inter *= np.minimum(y2, other_y2) - np.maximum(y1, other_y1) + pixel
    union = box_areas(boxes, pixel)[:, None] + box_areas(others, pixel)
    union -= inter
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.divide(inter, union, out=inter)
    iou[(other_x1 > x2) | (other_x2 < x1) | (other_y1 > y2) | (other_y2 < y1)] = 0
    return iou


def overlaps(boxes: np.ndarray, others: np.ndarray, normalized: bool) -> np.ndarray:
    """[K, L] IoUs of [K, 4] and [L, 4] boxes, or of polygon boxes (8 to 32 coordinates)."""
    return ious(boxes, others, normalized) if boxes.shape[-1] == 4 else polygon_ious(boxes, others)


def greedy_keep(boxes: np.ndarray, normalized: bool, threshold, eta: float) -> list[int]:
    """Positions kept by greedy suppression of boxes in their order: a box goes when its IoU with a kept one is
    above the threshold (a NaN IoU too), which shrinks by eta after each kept box while above 0.5."""
    kept: list[int] = []
    if eta >= 1:   # a fixed threshold: each kept box drops the later ones it overlaps, one row of IoUs at a time
        dropped = np.zeros(len(boxes), bool)
        for i in range(len(boxes)):
            if not dropped[i]:
                kept.append(i)
                dropped[i + 1:] |= ~(overlaps(boxes[i:i + 1], boxes[i + 1:], normalized)[0] <= threshold)
        return kept
    for i in range(len(boxes)):   # the threshold a box meets is the one when its turn comes
        if not kept or (overlaps(boxes[i:i + 1], boxes[kept], normalized)[0] <= threshold).all():
            kept.append(i)
            if threshold > 0.5:
                threshold = threshold * boxes.dtype.type(eta)
    return kept


@kernel("nms")
def nms(k):
    """Indices (int64) of the boxes kept, in the given order: a box goes when its IoU (no pixel offset) with
    an earlier kept box is above iou_threshold."""
    boxes = k.x("Boxes")
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"Boxes must be [N, 4], got {list(boxes.shape)}")
    threshold, areas = attr32(k, "iou_threshold"), (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    suppressed = np.zeros(len(boxes), bool)
    for i in range(len(boxes)):   # each box not suppressed yet suppresses the later ones it overlaps
        if suppressed[i]:
            continue
        box, later = boxes[i], boxes[i + 1:]
        inter = (np.maximum(np.minimum(box[2], later[:, 2]) - np.maximum(box[0], later[:, 0]), 0)
                 * np.maximum(np.minimum(box[3], later[:, 3]) - np.maximum(box[1], later[:, 1]), 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            suppressed[i + 1:] |= inter / (areas[i] + areas[i + 1:] - inter) > threshold
    return {"KeepBoxesIdxs": np.flatnonzero(~suppressed).astype(np.int64)}


def _decays(boxes: np.ndarray, normalized: bool, gaussian: bool, sigma: float) -> np.ndarray:
    """Matrix NMS's decay of each box (sorted by score): the least over higher-scored boxes j of
    f(iou with j, j's own largest IoU with a box above it), at most 1. Rows of boxes at a time, each against the
    boxes above it, so that memory stays within ROW_BLOCK values however many boxes there are."""
    count, dtype = len(boxes), boxes.dtype
    compensate, decays = np.zeros(count, dtype), np.ones(count, dtype)
    step = max(1, min(ROW_BLOCK // max(count, 1), -(-count // 8)))   # a few blocks: IoUs below the diagonal only
    for first in range(0, count, step):
        last = min(first + step, count)
        above = np.arange(first, last)[:, None] > np.arange(last)
        overlaps = np.where(above, ious(boxes[first:last], boxes[:last], normalized), 0)
        # box i's largest IoU with a higher-scored box (C++'s std::max, like fmax, passes over a NaN)
        compensate[first:last] = np.fmax.reduce(overlaps, axis=1, initial=0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if gaussian:
                decay = exp((compensate[:last] * compensate[:last] - overlaps * overlaps) * dtype.type(sigma))
            else:   # Paddle divides in double; rounding to float after the least changes nothing (it is monotonic)
                decay = (1.0 - overlaps.astype(np.float64)) / (1.0 - compensate[:last].astype(np.float64))
        # C++'s std::min(min_decay, decay) keeps min_decay when decay is NaN: fmin does too
        decays[first:last] = np.fmin.reduce(decay, axis=1, initial=1, where=above)
    return decays


def _matrix_nms_image(k, boxes: np.ndarray, scores: np.ndarray):
    """(box index, class, decayed score) of one image's detections, in class order, each class by score."""
    dtype = scores.dtype
    threshold, post = dtype.type(attr32(k, "score_threshold")), dtype.type(attr32(k, "post_threshold"))
    top_k, found = k.attr("nms_top_k"), []
    for label in range(scores.shape[0]):
        if label == k.attr("background_label"):
            continue
        candidates = np.flatnonzero(scores[label] > threshold)
        count = len(candidates) if top_k <= -1 else min(top_k, len(candidates))
        if not count:
            continue
        order = candidates[partial_sort(scores[label, candidates], count)]
        decay = _decays(boxes[order], k.attr("normalized"), k.attr("use_gaussian"), attr32(k, "gaussian_sigma"))
        decayed = decay * scores[label, order]
        keep = decayed > post
        found += [(int(i), label, s) for i, s in zip(order[keep], decayed[keep])]
    keep_top_k = k.attr("keep_top_k")
    count = len(found) if keep_top_k <= -1 else min(keep_top_k, len(found))
    if not count:
        return []
    return [found[p] for p in partial_sort(np.array([s for _, _, s in found], dtype), count)]


@kernel("matrix_nms")
def matrix_nms(k):
    """Matrix NMS (SOLOv2) per image and class: scores decay by their IoUs with higher-scored boxes instead of
    being dropped. Out rows [class, decayed score, x1, y1, x2, y2], Index the box (image * M + box), RoisNum
    the rows per image."""
    boxes, scores = k.x("BBoxes"), k.x("Scores")
    if boxes.ndim != 3 or scores.ndim != 3 or boxes.shape[:2] != (scores.shape[0], scores.shape[2]):
        raise ValueError(f"BBoxes [N, M, 4] and Scores [N, C, M] disagree: {list(boxes.shape)} and "
                         f"{list(scores.shape)}")
    rows, indices, counts = [], [], []
    for image in range(scores.shape[0]):
        found = _matrix_nms_image(k, boxes[image], scores[image])
        rows += [[label, score, *boxes[image, i]] for i, label, score in found]
        indices += [image * scores.shape[2] + i for i, _, _ in found]
        counts.append(len(found))
    return {"Out": np.array(rows, scores.dtype).reshape(-1, 2 + boxes.shape[2]),
            "Index": np.array(indices, np.int32).reshape(-1, 1), "RoisNum": np.array(counts, np.int32)}


def _class_nms(k, boxes: np.ndarray, scores: np.ndarray) -> list[int]:
    """multiclass_nms3's suppression of one class: boxes above score_threshold, at most nms_top_k by score
    (ties in index order), greedily."""
    dtype = scores.dtype
    candidates = np.flatnonzero(scores > dtype.type(attr32(k, "score_threshold")))
    order = candidates[np.argsort(-scores[candidates], kind="stable")]
    if k.attr("nms_top_k") > -1:
        order = order[:k.attr("nms_top_k")]
    kept = greedy_keep(boxes[order], k.attr("normalized"), dtype.type(attr32(k, "nms_threshold")),
                       attr32(k, "nms_eta"))
    return order[kept].tolist()


def _multiclass_image(k, boxes: np.ndarray, scores: np.ndarray, per_class_boxes: bool) -> list[tuple[int, int]]:
    """(class, box) pairs one image keeps, by class, then by score (3-D) or box (2-D: per_class_boxes)."""
    selected = {}
    for label in range(scores.shape[1] if per_class_boxes else scores.shape[0]):
        if label == k.attr("background_label"):
            continue
        if per_class_boxes:
            kept = sorted(_class_nms(k, boxes[:, label], scores[:, label]))
        else:
            kept = _class_nms(k, boxes, scores[label])
        selected[label] = kept
    pairs = [(label, i) for label, kept in selected.items() for i in kept]
    keep_top_k = k.attr("keep_top_k")
    if -1 < keep_top_k < len(pairs):
        # the kernel ranks by the score as a C float, stably
        score_of = [np.float32(scores[i, label] if per_class_boxes else scores[label, i]) for label, i in pairs]
        ranked = sorted(range(len(pairs)), key=lambda p: -score_of[p])[:keep_top_k]
        regrouped = {}
        for p in ranked:
            regrouped.setdefault(pairs[p][0], []).append(pairs[p][1])
        pairs = [(label, i) for label in sorted(regrouped)
                 for i in (sorted(regrouped[label]) if per_class_boxes else regrouped[label])]
    return pairs


def image_rows(k, boxes: np.ndarray, scores: np.ndarray, per_class_boxes: bool) -> tuple[list[list], list[int]]:
    """One image's kept rows [class, score, x1, y1, x2, y2] (multiclass_nms's and multiclass_nms3's) and each
    row's box in the image (2-D: box * C + class)."""
    pairs = _multiclass_image(k, boxes, scores, per_class_boxes) if len(boxes) else []
    if per_class_boxes:
        return ([[label, scores[i, label], *boxes[i, label]] for label, i in pairs],
                [i * scores.shape[1] + label for label, i in pairs])
    return [[label, scores[label, i], *boxes[i]] for label, i in pairs], [i for _, i in pairs]


def _counted(rois_num: np.ndarray, boxes: int) -> list[tuple[int, int]]:
    """[start, end) rows of each image as RoisNum counts them."""
    counts = [int(c) for c in rois_num.reshape(-1)]
    if sum(counts) != boxes or min(counts, default=0) < 0:
        raise ValueError(f"RoisNum {counts} does not count BBoxes' {boxes} boxes")
    starts = np.cumsum([0, *counts]).tolist()
    return list(zip(starts[:-1], starts[1:]))


SETS_LOD.add("multiclass_nms3")   # NmsRoisNum counts the rows; Paddle's Out and Index carry no LoD


@kernel("multiclass_nms3")
def multiclass_nms3(k):
    """Greedy NMS per image and class. BBoxes [N, M, 4] with Scores [N, C, M], or BBoxes [M, C, 4] with
    Scores [M, C] (boxes per class) whose images RoisNum counts (without it BBoxes' LoD, as a legacy program gives
    them; all one image without either); with 3-D Scores, BBoxes
    may be convex polygons [N, M, 8 to 32] (gradc.executor.kernels.detection_poly). Out rows
    [class, score, x1, y1, x2, y2 (or the polygon's coordinates)] by class; Index the box (3-D: image * M + box;
    2-D: box * C + class);
    NmsRoisNum the rows per image. When nothing is kept and Index is not asked for, Out is [[-1]], as in Paddle."""
    boxes, scores, rois_num = k.x("BBoxes"), k.x("Scores"), k.optional("RoisNum")
    if boxes.shape[-1] != 4 and (scores.ndim != 3 or boxes.shape[-1] not in POLYGON_SIZES):
        raise ValueError(f"BBoxes must hold 4-coordinate boxes, or with 3-D Scores polygons of 8, 16, 24 or 32, "
                         f"got {list(boxes.shape)}")
    if scores.ndim == 3:
        images = [(boxes[i], scores[i], i * scores.shape[2]) for i in range(scores.shape[0])]
    else:
        spans = image_spans(k, "BBoxes", boxes.shape[0]) if rois_num is None else _counted(rois_num, boxes.shape[0])
        images = [(boxes[s:e], scores[s:e], s * scores.shape[1]) for s, e in spans]
    rows, indices, counts = [], [], []
    for image_boxes, image_scores, offset in images:
        kept_rows, kept_boxes = image_rows(k, image_boxes, image_scores, scores.ndim == 2)
        rows += kept_rows
        indices += [offset + box for box in kept_boxes]
        counts.append(len(kept_rows))
    out = np.array(rows, scores.dtype).reshape(-1, 2 + boxes.shape[-1])
    if not rows and not k.wants("Index"):
        out = np.full((1, 1), -1, scores.dtype)
    return {"Out": out, "Index": np.array(indices, np.int32).reshape(-1, 1),
            "NmsRoisNum": np.array(counts, np.int32)}
