"""Kernels of gradc.ops.detection_v1_nms: multiclass_nms, generate_proposals, collect_fpn_proposals. They select
as their successors' kernels do (gradc.executor.kernels.detection_nms, detection_proposals) and give their outputs
Paddle's LoD: offsets of each image's rows."""

from __future__ import annotations

import numpy as np

from ..lod import SETS_LOD
from . import kernel
from .detection import attr32
from .detection_nms import _multiclass_image, greedy_keep
from .detection_proposals import decode_deltas
from .detection_sort import by_score, full_sort, nth_element
from .detection_v1_boxes import image_spans

SETS_LOD.update({"multiclass_nms", "generate_proposals", "collect_fpn_proposals"})


def offsets_of(counts) -> tuple[tuple[int, ...]]:
    """A one-level LoD of these row counts."""
    return (tuple(np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).tolist()),)


@kernel("multiclass_nms")
def multiclass_nms(k):
    """Greedy NMS per image and class (multiclass_nms3's): BBoxes [N, M, 4] with Scores [N, C, M], or BBoxes
    [M, C, 4] (whose LoD tells the images) with Scores [M, C]. Out rows [class, score, x1, y1, x2, y2] by image, then
    class, its LoD each image's rows; when no image keeps a box, Out is [[-1]] (LoD [0, 1]), as in Paddle."""
    boxes, scores = k.x("BBoxes"), k.x("Scores")
    if boxes.shape[-1] != 4:
        raise ValueError(f"BBoxes must hold 4-coordinate boxes (gradc has no polygon NMS), got {list(boxes.shape)}")
    per_class = scores.ndim == 2
    if per_class:
        images = [(boxes[s:e], scores[s:e]) for s, e in image_spans(k, "BBoxes", boxes.shape[0])]
    else:
        images = list(zip(boxes, scores))
    rows, counts = [], []
    for image_boxes, image_scores in images:
        pairs = _multiclass_image(k, image_boxes, image_scores, per_class) if len(image_boxes) else []
        for label, i in pairs:
            box = image_boxes[i, label] if per_class else image_boxes[i]
            rows.append([label, image_scores[i, label] if per_class else image_scores[label, i], *box])
        counts.append(len(pairs))
    if not rows:
        k.set_lod("Out", ((0, 1),))
        return {"Out": np.full((1, 1), -1, scores.dtype)}
    k.set_lod("Out", offsets_of(counts))
    return {"Out": np.array(rows, scores.dtype)}


def _pre_nms_order(scores: np.ndarray, top_n: int) -> np.ndarray:
    """Paddle's pre-NMS pick: all by descending score (std::sort), or the top_n by std::nth_element, whose order
    only ties can show (NMS re-sorts them)."""
    if top_n <= 0 or top_n >= scores.size:
        return full_sort(scores)
    chosen = by_score(scores, top_n)
    return chosen if chosen is not None else nth_element(scores, top_n)


def _proposals_of_image(k, scores, deltas, info, anchors, variances):
    """(boxes [R, 4], scores [R]) one image proposes: boxes in pixels (a width counts both ends) clipped to the
    image, kept when their size over the image's scale is at least min_size and their centre inside."""
    dtype, one = scores.dtype, scores.dtype.type(1)
    order = _pre_nms_order(scores, k.attr("pre_nms_topN"))
    scores = scores[order]
    boxes = decode_deltas(anchors[order], deltas[order], variances[order], one)
    height, width, scale = info
    boxes[:, 0::2] = np.maximum(np.minimum(boxes[:, 0::2], width - one), 0)
    boxes[:, 1::2] = np.maximum(np.minimum(boxes[:, 1::2], height - one), 0)
    box_w, box_h = boxes[:, 2] - boxes[:, 0] + one, boxes[:, 3] - boxes[:, 1] + one
    min_size = dtype.type(max(attr32(k, "min_size"), 1.0))
    keep = ((boxes[:, 2] - boxes[:, 0]) / scale + one >= min_size) & \
        ((boxes[:, 3] - boxes[:, 1]) / scale + one >= min_size) & \
        (boxes[:, 0] + box_w / dtype.type(2) <= width) & (boxes[:, 1] + box_h / dtype.type(2) <= height)
    if not keep.any():   # Paddle proposes one empty box with score 0
        return np.zeros((1, 4), dtype), np.zeros(1, dtype)
    boxes, scores = boxes[keep], scores[keep]
    nms_thresh = attr32(k, "nms_thresh")
    if nms_thresh <= 0:
        return boxes, scores
    # Paddle's NMS pops the best from a stable ascending sort: among equal scores the later box comes first
    ranked = np.argsort(scores, kind="stable")[::-1]
    kept = ranked[greedy_keep(boxes[ranked], False, dtype.type(nms_thresh), attr32(k, "eta"))]
    if 0 < k.attr("post_nms_topN") < len(kept):
        kept = kept[:k.attr("post_nms_topN")]
    return boxes[kept], scores[kept]


@kernel("generate_proposals")
def generate_proposals(k):
    """RPN proposals per image (generate_proposals_v2's with pixel_offset, ImInfo [N, 3] (height, width, scale)
    for ImShape): RpnRois [R, 4] and RpnRoiProbs [R, 1] with a LoD of each image's rows, and RpnRoisNum."""
    scores, deltas, info = k.x("Scores"), k.x("BboxDeltas"), k.x("ImInfo")
    anchors, variances = k.x("Anchors").reshape(-1, 4), k.x("Variances").reshape(-1, 4)
    n, a, h, w = scores.shape
    if deltas.shape != (n, 4 * a, h, w) or len(anchors) != a * h * w or variances.shape != anchors.shape:
        raise ValueError(f"BboxDeltas {list(deltas.shape)}, Anchors and Variances must give 4 values per anchor "
                         f"of Scores {list(scores.shape)}")
    if info.shape != (n, 3):
        raise ValueError(f"ImInfo must be [N, 3] = [{n}, 3] (height, width, scale), got {list(info.shape)}")
    boxes, probs = [], []
    for i in range(n):
        image_boxes, image_scores = _proposals_of_image(
            k, scores[i].transpose(1, 2, 0).reshape(-1), deltas[i].transpose(1, 2, 0).reshape(-1, 4),
            info[i].astype(scores.dtype), anchors, variances)
        boxes.append(image_boxes)
        probs.append(image_scores)
    counts = [len(b) for b in boxes]
    for slot in ("RpnRois", "RpnRoiProbs"):
        k.set_lod(slot, offsets_of(counts))
    return {"RpnRois": np.concatenate(boxes).astype(scores.dtype),
            "RpnRoiProbs": np.concatenate(probs).reshape(-1, 1).astype(scores.dtype),
            "RpnRoisNum": np.array(counts, np.int32)}


def _level_images(k, i: int, rows: int) -> tuple[np.ndarray, int]:
    """The image of each RoI of level i and the number of images: by MultiLevelRoIsNum[i] when given, else by the
    level's LoD (without one, a single image)."""
    if k.has("MultiLevelRoIsNum"):
        counts = k.x("MultiLevelRoIsNum", i).reshape(-1).astype(np.int64)
        if counts.sum() != rows or (counts < 0).any():
            raise ValueError(f"MultiLevelRoIsNum[{i}] {counts.tolist()} does not count the level's {rows} RoIs")
    else:
        counts = np.diff([start for start, _ in image_spans(k, "MultiLevelRois", rows, i)] + [rows])
    return np.repeat(np.arange(len(counts)), counts), len(counts)


@kernel("collect_fpn_proposals")
def collect_fpn_proposals(k):
    """The post_nms_topN best-scored RoIs of all levels, grouped by image (stably); FpnRois' LoD and RoisNum count
    each image's RoIs. Among equal scores the last listed (by level, then row) comes first: Paddle stable-sorts
    with the comparator a >= b, which reverses ties. Paddle advances the image by at most one per RoI, so the
    first RoI after an image without RoIs is counted to that empty image, and it reads the counts of the images
    after the last one holding a RoI out of bounds; gradc keeps each RoI's image."""
    rois, scores = k.xs("MultiLevelRois"), k.xs("MultiLevelScores")
    if len(rois) != len(scores) or any(r.shape != (len(s), 4) or s.size != len(s) for r, s in zip(rois, scores)):
        raise ValueError(f"each level's RoIs [R, 4] and scores [R, 1] must agree, got "
                         f"{[list(r.shape) for r in rois]} and {[list(s.shape) for s in scores]}")
    levels = [_level_images(k, i, len(r)) for i, r in enumerate(rois)]
    if len({count for _, count in levels}) != 1:
        raise ValueError(f"the levels hold different numbers of images: {[count for _, count in levels]}")
    all_rois, all_scores = np.concatenate(rois), np.concatenate(scores).reshape(-1)
    all_images = np.concatenate([images for images, _ in levels])
    best = (len(all_scores) - 1 - np.argsort(-all_scores[::-1], kind="stable"))[:k.attr("post_nms_topN")]
    best = best[np.argsort(all_images[best], kind="stable")]
    counts = np.bincount(all_images[best], minlength=levels[0][1]).astype(np.int32)
    k.set_lod("FpnRois", offsets_of(counts))
    return {"FpnRois": all_rois[best], "RoisNum": counts}
