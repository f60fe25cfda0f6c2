"""A detector's mean average precision over the whole set (``gradc evaluate --detections``): the rows an NMS op of the
program keeps, [M, 6] (class, score, x1, y1, x2, y2) with the op's count of rows of each image (multiclass_nms3's
NmsRoisNum, matrix_nms's RoisNum), against the data's ground-truth boxes [N, G, 4] (x1, y1, x2, y2, in the rows'
coordinates) and classes [N, G], padded where the class is below 0 or the box has no area (yolo_loss's zero rows).
VOC's rule at each IoU threshold: a class's detections over the whole set by score, highest first (ties in the
order of the data), each a true positive when the box of its class it overlaps most is at IoU >= T (COCO's
comparison, in continuous coordinates: no +1 pixel) and not matched before, else a false positive; AP the area under
the precision envelope (each precision the highest at that recall or beyond: VOC 2010's, py-faster-rcnn's
compute_ap); mAP the mean over the classes with a box in the set. VOC 2007's 11-point AP, PaddleDetection's
DetectionMAP (+1 pixel, IoU > T, no envelope for 'integral') and COCO's 101-point AP give other numbers."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import GradcError, GradcNotice, GradcWarning
from ..ir import Block, Program
from .metric_inputs import checked_inputs

COUNT_SLOTS = {"multiclass_nms3": "NmsRoisNum", "matrix_nms": "RoisNum"}   # an NMS op's rows of each image


def parse_detections(value: str) -> tuple[str, str, str]:
    """``ROWS,BOXES,LABELS``: the program's NMS rows, the data's true boxes and their classes."""
    names = tuple(name.strip() for name in value.split(","))
    if len(names) != 3 or not all(names):
        raise GradcError(f"--detections {value!r}: give ROWS,BOXES,LABELS (the rows an NMS op of the program keeps, "
                         f"[M, 6], the data's true boxes [N, G, 4] and their classes [N, G], < 0 in padding)")
    return names


def parse_iou(values: Sequence) -> list[float]:
    """Each IoU threshold once, in order (0.5 when none is given)."""
    thresholds = sorted({float(value) for value in values or [0.5]})
    if not all(0 < value <= 1 for value in thresholds):
        raise GradcError(f"--iou {', '.join(f'{value:g}' for value in thresholds)}: give IoU thresholds above 0 and "
                         f"up to 1")
    return thresholds


def map_key(threshold: float) -> str:
    return f"map@{threshold:g}"


def count_var(program: Program, names: Sequence[str], detections: tuple[str, ...]) -> str:
    """The var holding the per-image counts of the NMS op writing the rows; the rows [M, 6], the boxes and labels in
    the data."""
    rows, var = detections[0], checked_inputs(program, names, "--detections", detections)
    writer = next(op for op in program.global_block.ops if rows in op.output_names())
    if writer.type not in COUNT_SLOTS or rows not in writer.output("Out"):
        raise GradcError(f"evaluation: --detections: '{rows}' is written by {writer.type}, not by an NMS op that "
                         f"counts each image's rows ({', '.join(f'{op} {slot}' for op, slot in COUNT_SLOTS.items())})")
    counts = writer.output(COUNT_SLOTS[writer.type])
    if not counts:
        raise GradcError(f"evaluation: --detections: the {writer.type} op writing '{rows}' has no "
                         f"{COUNT_SLOTS[writer.type]} output, so no rows of each image (build it with its count "
                         f"output: paddle.vision.ops's return_rois_num=True)")
    if list(var.shape or [])[-1:] not in ([6], [-1]):
        raise GradcError(f"evaluation: --detections: '{rows}' {list(var.shape or [])} is not rows of (class, score, "
                         f"x1, y1, x2, y2)")
    return counts[0]


def detections_hint(program: Program, names: Sequence[str]) -> str:
    """A detector's NMS rows among the outputs and the data's arrays it does not read: the --detections scoring
    them."""
    block = program.global_block
    outputs = {name for op in block.ops if op.type == "fetch" for name in op.input("X")}
    rows = [name for op in block.ops if op.type in COUNT_SLOTS for name in op.output("Out") if name in outputs]
    unread = [name for name in names if block.find_var(name) is None]
    if not rows or not unread:
        return ""
    return (f"; a detector's mAP: --detections {rows[0]},BOXES,LABELS, of the arrays it does not read: "
            f"{', '.join(unread)}")


def nms_rows(block: Block) -> set[str]:
    """The rows the block's NMS ops keep: not class scores, whatever their width."""
    return {name for op in block.ops if op.type in COUNT_SLOTS for name in op.output("Out")}


class DetectionTally:
    """Every image's kept rows and true boxes, matched over the whole set at the end."""

    def __init__(self, detections: tuple[str, ...], thresholds: Sequence[float]):
        self.detections, self.thresholds, self.source = detections, list(thresholds), "data"
        self.rows: list[np.ndarray] = []     # [M, 7]: the image's index in the set, then the op's row
        self.boxes: list[np.ndarray] = []    # a list an image: [G, 5], class then corners, padding left out
        self.seen = 0
        self.flat = 0   # true boxes of a class >= 0, not all zero, without area: centre-size ones, not corners?
        self.unit = True   # every true box within [0, 1]: normalised, unlike pixel rows?

    def add(self, rows, counts, batch: Mapping, source: str) -> None:
        rows, counts = np.asarray(rows, np.float64).reshape(-1, 6), np.asarray(counts, np.int64).reshape(-1)
        boxes = np.asarray(batch[self.detections[1]], np.float64)
        labels = np.asarray(batch[self.detections[2]])
        self.source = source
        if counts.sum() != len(rows) or len(counts) != len(boxes):
            raise GradcError(f"{source}: --detections: {len(rows)} rows '{self.detections[0]}' counted "
                             f"{counts.tolist()} for {len(boxes)} images")
        if boxes.shape[-1:] != (4,) or labels.shape != boxes.shape[:-1] or boxes.ndim != 3:
            raise GradcError(f"{source}: --detections: the boxes '{self.detections[1]}' {list(boxes.shape)} and "
                             f"labels '{self.detections[2]}' {list(labels.shape)} are not [N, G, 4] and [N, G]")
        self.rows.append(np.c_[np.repeat(np.arange(len(counts)) + self.seen, counts), rows])
        for image_boxes, image_labels in zip(boxes, labels):
            width, height = image_boxes[:, 2] - image_boxes[:, 0], image_boxes[:, 3] - image_boxes[:, 1]
            real = (image_labels >= 0) & (width > 0) & (height > 0)
            self.flat += int(np.sum((image_labels >= 0) & ~real & np.any(image_boxes != 0, axis=-1)))
            self.boxes.append(np.c_[image_labels[real], image_boxes[real]])
        self.unit = self.unit and bool(np.all((boxes >= 0) & (boxes <= 1)))
        self.seen += len(counts)

    def results(self) -> dict:
        rows = np.concatenate(self.rows) if self.rows else np.zeros((0, 7))
        classes = sorted({int(c) for image in self.boxes for c in image[:, 0]})
        if not classes:   # undefined, as the other metrics with nothing to count: a training run goes on
            keys = [map_key(threshold) for threshold in self.thresholds]
            warnings.warn(f"{self.source}: --detections: no true box in '{self.detections[1]}' (every class "
                          f"'{self.detections[2]}' below 0 or box without area): {', '.join(keys)} undefined (nan)",
                          GradcNotice, stacklevel=2)
            return {**dict.fromkeys(keys, math.nan), **{f"class_ap@{t:g}": [] for t in self.thresholds}}
        self._warn_coordinates(rows)
        width = max([*classes, *rows[:, 1].astype(int)]) + 1
        results = {}
        for threshold in self.thresholds:
            aps = {c: self._average_precision(rows[rows[:, 1] == c], c, threshold) for c in classes}
            results[map_key(threshold)] = float(np.mean(list(aps.values())))
            results[f"class_ap@{threshold:g}"] = [aps.get(c) for c in range(width)]
        return results

    def _warn_coordinates(self, rows: np.ndarray) -> None:
        """Boxes that cannot be the rows' corners: an mAP of them would be wrong, not refused."""
        named = f"--detections: the true boxes '{self.detections[1]}'"
        if self.flat:
            warnings.warn(f"{named}: {self.flat} of a class >= 0 have x2 <= x1 or y2 <= y1 and are left out as "
                          f"padding; give corners (x1, y1, x2, y2), not centre and size (yolo_loss's)", GradcWarning,
                          stacklevel=2)
        if self.unit and len(rows) and rows[:, 3:].max() > 1.5:
            warnings.warn(f"{named} all lie within [0, 1] and the detections reach {rows[:, 3:].max():g}: give them "
                          f"in the detections' coordinates (pixels of im_size, not normalised)", GradcWarning,
                          stacklevel=2)

    def _average_precision(self, rows: np.ndarray, label: int, threshold: float) -> float:
        truth = [image[image[:, 0] == label, 1:] for image in self.boxes]
        matched = [np.zeros(len(boxes), bool) for boxes in truth]
        hits = np.zeros(len(rows), bool)
        for at, row in enumerate(rows[np.argsort(-rows[:, 2], kind="stable")]):
            boxes = truth[int(row[0])]
            if not len(boxes):
                continue
            overlaps = _iou(row[3:], boxes)
            best = int(np.argmax(overlaps))
            if overlaps[best] >= threshold and not matched[int(row[0])][best]:
                hits[at] = matched[int(row[0])][best] = True
        true_positives = np.cumsum(hits)
        recall = np.r_[0.0, true_positives / sum(map(len, truth)), 1.0]
        precision = np.r_[0.0, true_positives / np.arange(1, len(rows) + 1), 0.0]
        envelope = np.maximum.accumulate(precision[::-1])[::-1]
        steps = np.flatnonzero(recall[1:] != recall[:-1])
        return float(np.sum((recall[steps + 1] - recall[steps]) * envelope[steps + 1]))


def _iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """IoU of one (x1, y1, x2, y2) box with each of ``boxes``, in continuous coordinates (no +1 pixel)."""
    width = np.clip(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0, None)
    height = np.clip(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0, None)
    inter = width * height
    union = (box[2] - box[0]) * (box[3] - box[1]) + (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]) - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
