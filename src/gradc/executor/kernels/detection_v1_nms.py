"""Kernels of gradc.ops.detection_v1_nms: multiclass_nms(2), generate_proposals, collect_fpn_proposals. They select
as their successors' kernels do (gradc.executor.kernels.detection_nms, detection_proposals) and give their outputs
Paddle's LoD: offsets of each image's rows."""

from __future__ import annotations

import numpy as np

from ..lod import SETS_LOD
from . import kernel
from .detection_nms import image_rows
from .detection_proposals import rpn_proposals
from .detection_v1_boxes import image_spans, offsets_of

SETS_LOD.update({"multiclass_nms", "multiclass_nms2", "generate_proposals", "collect_fpn_proposals"})


def _multiclass(k) -> tuple[list, list[int], list[int]]:
    """Greedy NMS per image and class (multiclass_nms3's): BBoxes [N, M, 4] with Scores [N, C, M], or BBoxes
    [M, C, 4] (whose LoD tells the images) with Scores [M, C]. The kept rows [class, score, x1, y1, x2, y2] by image,
    then class; each row's box across the batch (3-D: image * M + box; 2-D: box * C + class); the rows per image."""
    boxes, scores = k.x("BBoxes"), k.x("Scores")
    if boxes.shape[-1] != 4:
        raise ValueError(f"BBoxes must hold 4-coordinate boxes (gradc has no polygon NMS), got {list(boxes.shape)}")
    per_class = scores.ndim == 2
    if per_class:
        images = [(boxes[s:e], scores[s:e], s * scores.shape[1]) for s, e in image_spans(k, "BBoxes", boxes.shape[0])]
    else:
        images = [(b, s, i * scores.shape[2]) for i, (b, s) in enumerate(zip(boxes, scores))]
    rows, indices, counts = [], [], []
    for image_boxes, image_scores, offset in images:
        kept_rows, kept_boxes = image_rows(k, image_boxes, image_scores, per_class)
        rows += kept_rows
        indices += [offset + box for box in kept_boxes]
        counts.append(len(kept_rows))
    return rows, indices, counts


@kernel("multiclass_nms")
def multiclass_nms(k):
    """Out's LoD is each image's rows; when no image keeps a box, Out is [[-1]] (LoD [0, 1]), as in Paddle."""
    rows, _, counts = _multiclass(k)
    if not rows:
        k.set_lod("Out", ((0, 1),))
        return {"Out": np.full((1, 1), -1, k.x("Scores").dtype)}
    k.set_lod("Out", offsets_of(counts))
    return {"Out": np.array(rows, k.x("Scores").dtype)}


@kernel("multiclass_nms2")
def multiclass_nms2(k):
    """multiclass_nms with each row's box (Index); nothing kept gives empty Out and Index, as in Paddle 2.x."""
    rows, indices, counts = _multiclass(k)
    for slot in ("Out", "Index"):
        k.set_lod(slot, offsets_of(counts))
    return {"Out": np.array(rows, k.x("Scores").dtype).reshape(-1, 6),
            "Index": np.array(indices, np.int32).reshape(-1, 1)}


@kernel("generate_proposals")
def generate_proposals(k):
    """RPN proposals per image (generate_proposals_v2's with pixel_offset, ImInfo [N, 3] (height, width, scale)
    for ImShape): RpnRois [R, 4] and RpnRoiProbs [R, 1] with a LoD of each image's rows, and RpnRoisNum."""
    n, info = len(k.x("Scores")), k.x("ImInfo")
    if info.shape != (n, 3):
        raise ValueError(f"ImInfo must be [N, 3] = [{n}, 3] (height, width, scale), got {list(info.shape)}")
    proposed = rpn_proposals(k, info, pixel_offset=True)
    for slot in ("RpnRois", "RpnRoiProbs"):
        k.set_lod(slot, offsets_of(proposed["RpnRoisNum"]))
    return proposed


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
    first RoI after an image without RoIs is counted to that empty image, and its FpnRois LoD ends at the last
    image holding a RoI (RoisNum then reads past its counts); gradc keeps each RoI's image and every image."""
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
