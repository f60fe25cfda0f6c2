"""Kernels of gradc.ops.detection_nms's proposal ops: generate_proposals_v2 (an RPN's boxes: decode, clip, drop
small ones, NMS) and distribute_fpn_proposals (RoIs over FPN levels by their scale)."""

from __future__ import annotations

import math

import numpy as np

from ..lod import SETS_LOD
from . import kernel
from .detection import attr32, c_math, exp
from .detection_nms import box_areas, greedy_keep
from .detection_sort import by_score, full_sort, nth_element
from .detection_v1_boxes import image_spans, offsets_of

BBOX_CLIP = math.log(1000.0 / 16.0)   # Paddle's bound on a log-size delta
SETS_LOD.add("distribute_fpn_proposals")   # each level's RoIs by image; RestoreIndex has none


def decode_deltas(anchors: np.ndarray, deltas: np.ndarray, variances: np.ndarray, pixel) -> np.ndarray:
    """Proposal boxes of anchors moved by (variance-scaled) deltas; size deltas are capped at log(1000 / 16)."""
    dtype = anchors.dtype
    width = anchors[:, 2] - anchors[:, 0] + pixel
    height = anchors[:, 3] - anchors[:, 1] + pixel
    center_x = anchors[:, 0] + (0.5 * width.astype(np.float64)).astype(dtype)
    center_y = anchors[:, 1] + (0.5 * height.astype(np.float64)).astype(dtype)
    x = variances[:, 0] * deltas[:, 0] * width + center_x
    y = variances[:, 1] * deltas[:, 1] * height + center_y
    cap = dtype.type(BBOX_CLIP)
    w = exp(np.minimum(variances[:, 2] * deltas[:, 2], cap)) * width
    h = exp(np.minimum(variances[:, 3] * deltas[:, 3], cap)) * height
    two = dtype.type(2)
    return np.stack([x - w / two, y - h / two, x + w / two - pixel, y + h / two - pixel], axis=1)


def _score_order(scores: np.ndarray, top_n: int, ordered_later: bool) -> np.ndarray:
    """Paddle's pre-NMS pick: all by descending score (std::sort), or the top_n by std::nth_element, whose order
    is seen only when no NMS re-sorts them (``ordered_later`` False) or among equal scores."""
    if top_n <= 0 or top_n >= scores.size:
        return full_sort(scores)
    chosen = by_score(scores, top_n) if ordered_later else None   # its order unseen where no tie decides a place
    return chosen if chosen is not None else nth_element(scores, top_n)


def _proposals_of_image(k, scores, deltas, image, anchors, variances, pixel_offset: bool):
    """(boxes [R, 4], scores [R]) one image proposes. ``image`` is (height, width), or (height, width, scale) for
    generate_proposals v1, which compares min_size with a box's size over the image's scale."""
    dtype, nms_thresh = scores.dtype, attr32(k, "nms_thresh")
    pixel = dtype.type(1 if pixel_offset else 0)
    order = _score_order(scores, k.attr("pre_nms_topN"), nms_thresh > 0)
    scores = scores[order]
    boxes = decode_deltas(anchors[order], deltas[order], variances[order], pixel)
    height, width, scale = image[0], image[1], image[2] if len(image) > 2 else dtype.type(1)
    boxes[:, 0::2] = np.maximum(np.minimum(boxes[:, 0::2], width - pixel), 0)
    boxes[:, 1::2] = np.maximum(np.minimum(boxes[:, 1::2], height - pixel), 0)
    box_w, box_h = boxes[:, 2] - boxes[:, 0] + pixel, boxes[:, 3] - boxes[:, 1] + pixel
    min_size = dtype.type(max(attr32(k, "min_size"), 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):   # a scale of 0 is Paddle's inf or NaN too
        keep = ((boxes[:, 2] - boxes[:, 0]) / scale + pixel >= min_size) & \
            ((boxes[:, 3] - boxes[:, 1]) / scale + pixel >= min_size)
    if pixel_offset:   # the box's center must also lie inside the image
        keep &= (boxes[:, 0] + box_w / dtype.type(2) <= width) & (boxes[:, 1] + box_h / dtype.type(2) <= height)
    if not keep.any():   # Paddle proposes one empty box with score 0
        return np.zeros((1, 4), dtype), np.zeros(1, dtype)
    boxes, scores = boxes[keep], scores[keep]
    if nms_thresh <= 0:
        return boxes, scores
    # Paddle's NMS pops the best from a stable ascending sort: among equal scores the later box comes first
    ranked = np.argsort(scores, kind="stable")[::-1]
    kept = ranked[greedy_keep(boxes[ranked], not pixel_offset, dtype.type(nms_thresh), attr32(k, "eta"))]
    if 0 < k.attr("post_nms_topN") < len(kept):
        kept = kept[:k.attr("post_nms_topN")]
    return boxes[kept], scores[kept]


def rpn_proposals(k, images: np.ndarray, pixel_offset: bool) -> dict[str, np.ndarray]:
    """RPN proposals per image: the pre_nms_topN best-scored anchors (Scores [N, A, H, W]) moved by their
    BboxDeltas [N, 4A, H, W] scaled by Variances, clipped to the image (``images``' row: height, width[, scale]),
    without boxes under min_size, then NMS (nms_thresh, eta) and the first post_nms_topN. RpnRois [R, 4],
    RpnRoiProbs [R, 1] and RpnRoisNum (boxes per image)."""
    scores, deltas = k.x("Scores"), k.x("BboxDeltas")
    anchors, variances = k.x("Anchors").reshape(-1, 4), k.x("Variances").reshape(-1, 4)
    n, a, h, w = scores.shape
    if deltas.shape != (n, 4 * a, h, w) or len(anchors) != a * h * w or variances.shape != anchors.shape:
        raise ValueError(f"BboxDeltas {list(deltas.shape)}, Anchors and Variances must give 4 values per anchor "
                         f"of Scores {list(scores.shape)}")
    proposed = [_proposals_of_image(k, scores[i].transpose(1, 2, 0).reshape(-1),
                                    deltas[i].transpose(1, 2, 0).reshape(-1, 4), images[i].astype(scores.dtype),
                                    anchors, variances, pixel_offset) for i in range(n)]
    return {"RpnRois": np.concatenate([boxes for boxes, _ in proposed]).astype(scores.dtype),
            "RpnRoiProbs": np.concatenate([probs for _, probs in proposed]).reshape(-1, 1).astype(scores.dtype),
            "RpnRoisNum": np.array([len(boxes) for boxes, _ in proposed], np.int32)}


@kernel("generate_proposals_v2")
def generate_proposals_v2(k):
    """rpn_proposals clipped to ImShape [N, 2] (height, width), with RpnRoisNum instead of Paddle's LoD."""
    n, im_shape = len(k.x("Scores")), k.x("ImShape")
    if im_shape.shape != (n, 2):
        raise ValueError(f"ImShape must be [N, 2] = [{n}, 2] (height, width), got {list(im_shape.shape)}")
    return rpn_proposals(k, im_shape, k.attr("pixel_offset"))


@kernel("distribute_fpn_proposals")
def distribute_fpn_proposals(k):
    """Each RoI goes to level floor(refer_level + log2(sqrt(area) / refer_scale + 1e-6)) clamped to
    [min_level, max_level]; MultiFpnRois keeps the RoIs' order within a level, RestoreIndex[i] is RoI i's row in
    the levels' concatenation, and MultiLevelRoIsNum counts each level's RoIs per image (RoisNum's images; without
    it FpnRois' LoD, as a legacy program gives them; else all one image), which each level's LoD holds too, as
    Paddle's."""
    rois, rois_num = k.x("FpnRois"), k.optional("RoisNum")
    dtype, low, high = rois.dtype, k.attr("min_level"), k.attr("max_level")
    if rois.ndim != 2 or rois.shape[1] != 4:
        raise ValueError(f"FpnRois must be [R, 4], got {list(rois.shape)}")
    if rois_num is None:
        counts = [end - start for start, end in image_spans(k, "FpnRois", len(rois))]
    else:
        counts = [int(c) for c in rois_num.reshape(-1)]
        if sum(counts) != len(rois) or min(counts, default=0) < 0:
            raise ValueError(f"RoisNum {counts} does not count FpnRois' {len(rois)} RoIs")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):   # a box of no size, or not finite
        scale = np.sqrt(box_areas(rois, dtype.type(1 if k.attr("pixel_offset") else 0)))
        level = np.floor(c_math(np.log2, scale / dtype.type(k.attr("refer_scale")) + dtype.type(1e-6))
                         + dtype.type(k.attr("refer_level")))
    # Paddle casts the level to int: what an int cannot hold (NaN, an infinite or overflowing scale) is INT_MIN
    level = np.clip(np.where(np.abs(level) < 2.0 ** 31, level, low), low, high).astype(np.int64)
    image = np.repeat(np.arange(len(counts)), counts)
    shuffled = np.argsort(level, kind="stable")
    restore = np.empty(len(rois), np.int32)
    restore[shuffled] = np.arange(len(rois), dtype=np.int32)
    levels = range(low, high + 1)
    per_image = [np.bincount(image[level == lvl], minlength=len(counts)).astype(np.int32) for lvl in levels]
    for i, level_counts in enumerate(per_image):
        k.set_lod("MultiFpnRois", offsets_of(level_counts), i)
    return {"MultiFpnRois": [rois[level == lvl] for lvl in levels], "RestoreIndex": restore.reshape(-1, 1),
            "MultiLevelRoIsNum": per_image}
