"""Kernels of gradc.ops.detection_v1_boxes: anchor_generator, box_clip, bipartite_match, in Paddle's order of
operations and types, so that values and ties come out as Paddle's."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from ..lod import SETS_LOD
from . import kernel
from .detection import attr32
from .detection_sort import sort_greater

EPS = 1e-6   # bipartite_match's "no overlap" below
SORTED_FROM = 130   # Paddle's bipartite matching sorts all pairs from this many rows on, else searches greedily
SETS_LOD.add("bipartite_match")   # its [instances, columns] outputs have no LoD, whatever their dim 0


def image_spans(k, slot: str, rows: int, i: int = 0) -> list[tuple[int, int]]:
    """[start, end) rows of each image: the last LoD level of the slot's i-th var, or all rows as one image."""
    lod = k.lod(slot, i)
    offsets = [0, rows] if lod is None else list(lod[-1])
    if offsets[-1] != rows:
        raise ValueError(f"the LoD of {slot} ({offsets}) does not cover its {rows} rows")
    return list(zip(offsets[:-1], offsets[1:]))


def offsets_of(counts) -> tuple[tuple[int, ...]]:
    """A one-level LoD of these row counts."""
    return (tuple(np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).tolist()),)


def c_round(x: np.ndarray) -> np.ndarray:
    """C's round: halves away from zero (numpy rounds them to even)."""
    magnitude = np.abs(x)
    whole = np.floor(magnitude)
    return np.copysign(whole + (magnitude - whole >= 0.5), x).astype(x.dtype)


@kernel("anchor_generator", shape_only=("Input",))
def anchor_generator(k):
    """Faster R-CNN's anchors [H, W, A, 4] of a feature map, per aspect ratio then size: a box of
    round(sqrt(stride_w * stride_h / ratio)) by that times the ratio, scaled by size / stride, centred at
    (w * stride_w + offset * (stride_w - 1), likewise for h); Variances the variances at every anchor."""
    feature = k.x("Input")
    dtype = feature.dtype
    h, w = feature.shape[2:]
    step_w, step_h = (dtype.type(step) for step in attr32(k, "stride"))
    offset = dtype.type(attr32(k, "offset"))
    sizes, ratios = attr32(k, "anchor_sizes").astype(dtype), attr32(k, "aspect_ratios").astype(dtype)
    # before the float64 intermediates; an empty map still computes one position's sizes x ratios anchors
    check_shape((max(h, 1), max(w, 1), len(sizes) * len(ratios), 4), dtype, "Anchors")
    base_w = c_round(np.sqrt(step_w * step_h / ratios))
    base_h = c_round(base_w * ratios)
    half_w = 0.5 * (((sizes / step_w)[None, :] * base_w[:, None]).reshape(-1).astype(np.float64) - 1)
    half_h = 0.5 * (((sizes / step_h)[None, :] * base_h[:, None]).reshape(-1).astype(np.float64) - 1)
    center_x = (np.arange(w, dtype=dtype) * step_w + offset * (step_w - 1)).astype(np.float64)[None, :, None]
    center_y = (np.arange(h, dtype=dtype) * step_h + offset * (step_h - 1)).astype(np.float64)[:, None, None]
    anchors = np.stack(np.broadcast_arrays(center_x - half_w, center_y - half_h, center_x + half_w,
                                           center_y + half_h), axis=-1).astype(dtype)
    variances = np.broadcast_to(attr32(k, "variances").astype(dtype), anchors.shape).copy()
    return {"Anchors": anchors, "Variances": variances}


@kernel("box_clip")
def box_clip(k):
    """Each image's boxes (Input's LoD) clipped to [0, round(width / scale) - 1] and [0, round(height / scale)
    - 1] of its ImInfo row (height, width, scale)."""
    boxes, info = k.x("Input"), k.x("ImInfo")
    if boxes.shape[-1] != 4 or info.ndim != 2 or info.shape[1] != 3:
        raise ValueError(f"Input must be [..., 4] boxes and ImInfo [N, 3], got {list(boxes.shape)} and "
                         f"{list(info.shape)}")
    spans = image_spans(k, "Input", boxes.shape[0])
    if len(spans) != len(info):
        raise ValueError(f"ImInfo has {len(info)} rows, one per image, but Input holds {len(spans)} (its LoD; "
                         f"without one, a single image)")
    clipped = np.empty_like(boxes)
    one = boxes.dtype.type(1)
    for (start, end), (height, width, scale) in zip(spans, info.astype(boxes.dtype)):
        with np.errstate(divide="ignore", invalid="ignore"):   # a scale of 0 is Paddle's inf or NaN too
            limits = np.array([c_round(width / scale) - one, c_round(height / scale) - one] * 2, boxes.dtype)
        clipped[start:end] = np.maximum(np.minimum(boxes[start:end], limits), 0)
    return {"Output": clipped}


def _bipartite(dist: np.ndarray, indices: np.ndarray, matched: np.ndarray) -> None:
    """Greedy one-to-one matching, the largest distance first: fills ``indices`` (row per column) and ``matched``."""
    rows, columns = dist.shape
    # from SORTED_FROM rows, every pair by std::sort with a > b: ties in libstdc++'s order; no EPS cut; a NaN
    # distance is never matched, but it moves the pairs around it as Paddle's std::sort moves them
    if rows >= SORTED_FROM:
        taken, count = np.zeros(rows, bool), 0
        for position in sort_greater(dist.reshape(-1)):
            row, column = divmod(int(position), columns)
            if count == min(rows, columns):   # Paddle stops at rows; no column is free past min(rows, columns)
                break
            if indices[column] == -1 and not taken[row] and dist[row, column] > 0:
                indices[column], matched[column], taken[row] = row, dist[row, column], True
                count += 1
        return
    # the largest distance of a free row and column, ties to the first column, then row; none below EPS
    free = np.where(dist >= dist.dtype.type(EPS), dist, -np.inf).T.copy()   # [column, row]; NaN is never taken
    for _ in range(min(rows, columns)):
        best = int(np.argmax(free))
        column, row = divmod(best, rows)
        if free[column, row] == -np.inf:
            return
        indices[column], matched[column] = row, dist[row, column]
        free[column, :] = -np.inf
        free[:, row] = -np.inf


def _per_prediction(dist: np.ndarray, indices: np.ndarray, matched: np.ndarray, threshold) -> None:
    """Each column still free takes its largest row at or above the threshold (and EPS), the first of ties."""
    candidates = np.where((dist >= dist.dtype.type(EPS)) & (dist >= threshold), dist, -np.inf)
    best = np.argmax(candidates, axis=0)
    best_dist = candidates[best, np.arange(dist.shape[1])]
    free = (indices == -1) & (best_dist > -np.inf)
    indices[free], matched[free] = best[free], best_dist[free]


@kernel("bipartite_match")
def bipartite_match(k):
    """Per instance (DistMat's LoD: its rows), the row matched to each column (-1: none) and their distance
    (0: none): greedy bipartite matching, then (per_prediction) each free column's best row above
    dist_threshold."""
    dist = k.x("DistMat")
    if dist.ndim != 2:
        raise ValueError(f"DistMat must be 2-D [rows, columns], got {list(dist.shape)}")
    spans = image_spans(k, "DistMat", dist.shape[0])
    indices = np.full((len(spans), dist.shape[1]), -1, np.int32)
    matched = np.zeros((len(spans), dist.shape[1]), dist.dtype)
    threshold = dist.dtype.type(attr32(k, "dist_threshold"))
    for i, (start, end) in enumerate(spans):
        if end > start:
            _bipartite(dist[start:end], indices[i], matched[i])
            if k.attr("match_type") == "per_prediction":
                _per_prediction(dist[start:end], indices[i], matched[i], threshold)
    for slot in ("ColToRowMatchIndices", "ColToRowMatchDist"):
        k.set_lod(slot, None)
    return {"ColToRowMatchIndices": indices, "ColToRowMatchDist": matched}
