"""Kernels of gradc.ops.yolo_loss (its docstring has the loss), in float64, vectorised over cells and gt boxes.
X is viewed as [N, M, H, W, 5 + class_num]: each cell's entries last. The grid is square (H = W): Paddle scales
both centre coordinates by H."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...ops.yolo_loss import entries
from . import kernel
from .activation import sigmoid

VALID_SIZE = 1e-6      # a gt box narrower or lower than this is padding
POSITIVE = 1e-5        # an objectness mask above this is a matched cell, weighted by its score
IGNORED = -0.5         # below this the cell's objectness is not counted
CHUNK = 1 << 22        # IoUs of predicted and gt boxes held at once


class Layout(NamedTuple):
    anchors: np.ndarray     # [A, 2] widths and heights in input pixels
    mask: list[int]         # the anchors X predicts with
    classes: int
    input_size: int         # H * downsample_ratio


class Matched(NamedTuple):
    """The gt boxes matched to an anchor of anchor_mask, in Paddle's order (image, then box)."""
    cell: tuple             # (image, slot in anchor_mask, row, column) index arrays
    targets: np.ndarray     # [K, 4]: tx, ty (offsets in the cell), tw, th (log sizes over the anchor's)
    box_weight: np.ndarray  # [K]: (2 - w h) score
    score: np.ndarray       # [K]
    label: np.ndarray       # [K]


def sigmoid_cross_entropy(logit, target):
    return np.maximum(logit, 0) - logit * target + np.log1p(np.exp(-np.abs(logit)))


def iou(a: tuple, b: tuple) -> np.ndarray:
    """IoU of boxes given as (centre x, centre y, w, h), broadcast."""
    def overlap(c1, w1, c2, w2):
        return np.minimum(c1 + w1 / 2, c2 + w2 / 2) - np.maximum(c1 - w1 / 2, c2 - w2 / 2)
    across, down = overlap(a[0], a[2], b[0], b[2]), overlap(a[1], a[3], b[1], b[3])
    inter = np.where((across < 0) | (down < 0), 0.0, across * down)
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def read(k):
    """(X as [N, M, H, W, E] float64, GTBox as float64, GTLabel, GTScore (ones by default), Layout), checked."""
    x, box, label = k.x("X"), k.x("GTBox"), k.x("GTLabel")
    score = k.optional("GTScore")
    mask, classes = list(k.attr("anchor_mask")), k.attr("class_num")
    anchors = np.asarray(k.attr("anchors"), np.float64)
    if (x.ndim != 4 or x.shape[1] != len(mask) * entries(classes) or x.shape[2] != x.shape[3] or box.ndim != 3
            or box.shape[::2] != (x.shape[0], 4) or label.shape != box.shape[:2]
            or (score is not None and score.shape != box.shape[:2])):
        raise ValueError("X must be [N, M * (5 + class_num), H, H] and GTBox [N, B, 4], GTLabel and GTScore [N, B]")
    n, _, h, w = x.shape
    cells = x.astype(np.float64).reshape(n, len(mask), entries(classes), h, w).transpose(0, 1, 3, 4, 2)
    score = np.ones(box.shape[:2]) if score is None else score.astype(np.float64)
    layout = Layout(anchors.reshape(-1, 2), mask, classes, h * k.attr("downsample_ratio"))
    return cells, box.astype(np.float64), label, score, layout


def matched(box, label, score, layout: Layout, grid: tuple[int, int], match: np.ndarray) -> Matched:
    """The matched gt boxes of ``match`` (GTMatchMask: slot in anchor_mask, -1 none) and their targets."""
    h, w = grid
    image, index = np.nonzero(match >= 0)
    x, y, bw, bh = box[image, index].T
    column, row = np.trunc(x * w).astype(np.int64), np.trunc(y * h).astype(np.int64)   # C's int(): toward 0
    outside = (column < 0) | (column >= w) | (row < 0) | (row >= h)
    if outside.any():
        i, t = image[outside][0], index[outside][0]
        raise ValueError(f"GTBox [{i}, {t}] has its centre ({box[i, t, 0]:g}, {box[i, t, 1]:g}) outside the image: "
                         f"in no cell of the {h}x{w} grid (column {column[outside][0]}, row {row[outside][0]})")
    slot = match[image, index].astype(np.int64)
    anchor = layout.anchors[np.asarray(layout.mask, np.int64)[slot]]
    targets = np.stack([x * h - column, y * h - row, np.log(bw * layout.input_size / anchor[:, 0]),
                        np.log(bh * layout.input_size / anchor[:, 1])], axis=1)
    weight = score[image, index]
    return Matched((image, slot, row, column), targets, (2 - bw * bh) * weight, weight, label[image, index])


def class_targets(found: Matched, layout: Layout, use_label_smooth: bool) -> np.ndarray:
    """[K, class_num]: 1 for the box's class and 0 for the others, smoothed to 1 - s and s."""
    smooth = min(1 / layout.classes, 1 / 40) if use_label_smooth else 0.0
    return np.where(np.arange(layout.classes) == found.label[:, None], 1 - smooth, smooth)


def _best_anchors(box, layout: Layout) -> np.ndarray:
    """[N, B] the anchor whose shape overlaps each gt box's most (the first of equals; IoU as Paddle's float)."""
    size = layout.anchors / layout.input_size
    shapes = iou((0.0, 0.0, size[:, 0], size[:, 1]), (0.0, 0.0, box[..., 2:3], box[..., 3:4]))
    return np.argmax(shapes.astype(np.float32), axis=-1)


def _objectness_mask(cells, box, valid, layout: Layout, scale_x_y: float, ignore_thresh: float) -> np.ndarray:
    """[N, M, H, W]: -1 where the predicted box overlaps a valid gt box by more than ignore_thresh, else 0."""
    n, m, h, w, _ = cells.shape
    bias = -0.5 * (scale_x_y - 1)
    size = layout.anchors[layout.mask] / layout.input_size   # [M, 2]
    centre_x = (np.arange(w) + sigmoid(cells[..., 0]) * scale_x_y + bias) / h
    centre_y = (np.arange(h)[:, None] + sigmoid(cells[..., 1]) * scale_x_y + bias) / h
    predicted = (centre_x, centre_y, np.exp(cells[..., 2]) * size[:, 0, None, None],
                 np.exp(cells[..., 3]) * size[:, 1, None, None])
    predicted = tuple(p[..., None] for p in predicted)
    best = np.zeros((n, m, h, w))
    step = max(1, CHUNK // max(best.size, 1))   # gt boxes at a time: N M H W IoUs each
    for first in range(0, box.shape[1], step):
        part = slice(first, first + step)
        gt = tuple(box[:, None, None, None, part, i] for i in range(4))
        overlaps = np.where(valid[:, None, None, None, part], iou(predicted, gt), 0.0)
        best = np.maximum(best, overlaps.max(axis=-1, initial=0.0))   # a NaN IoU stays NaN, as in one max
    return np.where(best > ignore_thresh, -1.0, 0.0)


@kernel("yolov3_loss")
def yolov3_loss(k):
    cells, box, label, score, layout = read(k)
    n, m, h, w, _ = cells.shape
    valid = (box[..., 2] >= VALID_SIZE) & (box[..., 3] >= VALID_SIZE)
    slot_of = np.full(len(layout.anchors), -1)
    for slot, anchor in reversed(list(enumerate(layout.mask))):   # the first slot of an anchor listed twice
        slot_of[anchor] = slot
    match = np.where(valid, slot_of[_best_anchors(box, layout)], -1)
    found = matched(box, label, score, layout, (h, w), match)
    at = cells[found.cell]
    box_loss = (sigmoid_cross_entropy(at[:, :2], found.targets[:, :2]).sum(axis=1)
                + np.abs(at[:, 2:4] - found.targets[:, 2:]).sum(axis=1)) * found.box_weight
    class_loss = sigmoid_cross_entropy(at[:, 5:], class_targets(found, layout, k.attr("use_label_smooth")))
    per_box = box_loss + class_loss.sum(axis=1) * found.score
    loss = np.bincount(found.cell[0], per_box, minlength=n).astype(np.float64)   # no box matched: bincount gives int64
    objectness = _objectness_mask(cells, box, valid, layout, k.attr("scale_x_y"), k.attr("ignore_thresh"))
    flat = np.ravel_multi_index(found.cell, (n, m, h, w))
    _, last = np.unique(flat[::-1], return_index=True)   # a cell matched twice keeps its last box's score
    objectness.reshape(-1)[flat[::-1][last]] = found.score[::-1][last]
    logit = cells[..., 4]
    loss += np.where(objectness > POSITIVE, sigmoid_cross_entropy(logit, 1.0) * objectness,
                     np.where(objectness > IGNORED, sigmoid_cross_entropy(logit, 0.0), 0.0)).sum(axis=(1, 2, 3))
    dtype = k.x("X").dtype
    return {"Loss": loss.astype(dtype), "ObjectnessMask": objectness.astype(dtype),
            "GTMatchMask": match.astype(np.int32)}


@kernel("yolov3_loss_grad")
def yolov3_loss_grad(k):
    """d Loss / dX with the masks fixed, every matched gt box's terms summed (Paddle keeps the last's only)."""
    cells, box, label, score, layout = read(k)
    n, m, h, w, e = cells.shape
    match, objectness = k.x("GTMatchMask"), k.x("ObjectnessMask").astype(np.float64)
    if match.shape != box.shape[:2] or objectness.shape != (n, m, h, w) or match.min(initial=0) < -1 or \
            match.max(initial=-1) >= m or k.x("Loss@GRAD").size != n:
        raise ValueError(f"GTMatchMask must be [N, B] slots of anchor_mask (or -1), ObjectnessMask [N, M, H, W] "
                         f"= {[n, m, h, w]} and Loss@GRAD [N] = [{n}]")
    found = matched(box, label, score, layout, (h, w), match)
    dloss = k.x("Loss@GRAD").astype(np.float64).reshape(n)
    at = cells[found.cell]
    terms = np.zeros((len(at), e))
    terms[:, :2] = (sigmoid(at[:, :2]) - found.targets[:, :2]) * found.box_weight[:, None]
    terms[:, 2:4] = np.where(at[:, 2:4] > found.targets[:, 2:], 1.0, -1.0) * found.box_weight[:, None]
    terms[:, 5:] = (sigmoid(at[:, 5:]) - class_targets(found, layout, k.attr("use_label_smooth"))) * \
        found.score[:, None]
    grad = np.zeros_like(cells)
    np.add.at(grad, found.cell, terms)
    logit = cells[..., 4]
    grad[..., 4] = np.where(objectness > POSITIVE, (sigmoid(logit) - 1) * objectness,
                            np.where(objectness > IGNORED, sigmoid(logit), 0.0))
    grad *= dloss[:, None, None, None, None]
    x = k.x("X")
    return {"X@GRAD": grad.transpose(0, 1, 4, 2, 3).reshape(x.shape).astype(x.dtype)}
