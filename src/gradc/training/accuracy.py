"""Top-k accuracy and mIoU of class scores against integer labels: which axis holds the classes, which labelled rows
(examples, a segmentation map's pixels, a tagger's real tokens) count, how many have their label among the k
best-scored classes, and the confusion matrix of the best-scored class against the label."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import GradcError, GradcNotice


def class_axis(scores: Sequence[int], labels: Sequence[int]) -> int:
    """The axis of the class scores that labels of shape ``labels`` leave out, held as 1 or dropped (the first, the
    batch, and the scores' unknown -1 dims match any size): the last when it fits, as F.cross_entropy's default, else
    the first that does (1 for scores [N, C, H, W] against labels [N, 1, H, W] or [N, H, W]); -1 when none does."""
    def fits(axis: int) -> bool:
        rest = [*scores[:axis], *scores[axis + 1:]]
        for expected in ([*scores[:axis], 1, *scores[axis + 1:]], rest):
            if len(expected) == len(labels) and all(
                    want < 0 or want == got for want, got in zip(expected[1:], labels[1:])):
                return True
        return False
    return next((axis for axis in [len(scores) - 1, *range(1, len(scores) - 1)] if fits(axis)), -1)



def scored_rows(scores, labels, axis: int, ignore_index: int | None, counted=None):
    """Class scores as rows [rows, C] and their labels, the rows counted only (a label outside the classes, or
    ``ignore_index``, is not, as the loss leaves it out; nor is one ``counted`` marks False: a padded token); None
    when ``labels`` are not integers, one a row."""
    scores = np.moveaxis(np.asarray(scores, dtype=np.float64), axis, -1)
    classes = scores.shape[-1]
    scores, labels = scores.reshape(-1, classes), np.asarray(labels).reshape(-1)
    if labels.dtype.kind not in "iu" or len(labels) != len(scores):
        return None
    valid = (labels >= 0) & (labels < classes) & (labels != ignore_index)
    if counted is not None:
        valid &= np.asarray(counted, dtype=bool).reshape(-1)
    return scores[valid], labels[valid]


def top_k_hits(scores: np.ndarray, labels: np.ndarray, topk: Sequence[int]) -> dict[int, int]:
    """{k: rows whose label is among the k best-scored classes} (ties above the label count against it)."""
    above = (scores > scores[np.arange(len(labels)), labels][:, None]).sum(axis=1)
    return {k: int((above < k).sum()) for k in topk}


def confusion(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """[C, C] counts of rows labelled i (row) predicted j (column, the best-scored class: the first of a tie, as
    argmax)."""
    classes = scores.shape[-1]
    predicted = scores.argmax(axis=1)
    return np.bincount(labels * classes + predicted, minlength=classes * classes).reshape(classes, classes)


def class_iou(matrix: np.ndarray) -> tuple[list[float | None], float]:
    """Each class's IoU (its hits over the rows labelled or predicted it; None for a class neither labelled nor
    predicted) and their mean over the classes that have one, from a confusion matrix summed over the whole set."""
    hits = np.diag(matrix)
    union = matrix.sum(axis=0) + matrix.sum(axis=1) - hits
    ious = [float(hit / total) if total else None for hit, total in zip(hits, union)]
    present = [iou for iou in ious if iou is not None]
    return ious, float(np.mean(present)) if present else 0.0


CLASS_F1_KEYS = ("macro_precision", "macro_recall", "macro_f1")


def class_f1(matrix: np.ndarray) -> dict:
    """Each class's precision, recall and F1 from a confusion matrix of the whole set (class_f1: None for a class
    neither labelled nor predicted) and their means over the other classes, each 0 where it is 0 / 0, as
    scikit-learn's average='macro' counts them."""
    hits, labelled, predicted = np.diag(matrix), matrix.sum(axis=1), matrix.sum(axis=0)
    present = (labelled + predicted) > 0
    precision = np.divide(hits, predicted, out=np.zeros(len(hits)), where=predicted > 0)[present]
    recall = np.divide(hits, labelled, out=np.zeros(len(hits)), where=labelled > 0)[present]
    f1 = f1_scores(hits, predicted - hits, labelled - hits)
    means = [float(np.mean(values)) if len(values) else 0.0 for values in (precision, recall, f1[present])]
    return {**dict(zip(CLASS_F1_KEYS, means)),
            "class_f1": [float(value) if shown else None for value, shown in zip(f1, present)]}


def f1_scores(hits, false_alarms, misses):
    """2 TP / (2 TP + FP + FN), the harmonic mean of precision and recall; 0 where it is 0 / 0."""
    below = 2 * hits + false_alarms + misses
    return np.divide(2 * hits, below, out=np.zeros_like(below, dtype=np.float64), where=below > 0)


def counted_positions(mask, labels_shape: Sequence[int]) -> np.ndarray | None:
    """Which labels count by ``mask``: nonzero where a token is real, of the labels' shape (dims of 1 aside), or one
    integer length per example when the labels have a sequence axis (1; the positions past it are padding); None
    when it is neither."""
    mask, shape = np.asarray(mask), tuple(labels_shape)
    if [dim for dim in mask.shape if dim != 1] == [dim for dim in shape if dim != 1]:
        return (mask != 0).reshape(shape)
    if mask.ndim == 1 and len(shape) >= 2 and mask.shape[0] == shape[0] and mask.dtype.kind in "iu":
        positions = np.arange(shape[1]).reshape(1, -1, *[1] * (len(shape) - 2))
        return np.broadcast_to(positions < mask.reshape(-1, *[1] * (len(shape) - 1)), shape)
    return None


def checked_mask(arrays: Mapping, mask: str | None, label: str, source: str,
                 shape: Sequence[int] | None = None) -> str | None:
    """The mask named, if it marks the labels: of their shape (or ``shape``, that of the entries they pick from), or a
    length per example along their axis 1."""
    if mask is None:
        return None
    if mask not in arrays:
        raise GradcError(f"{source}: --mask {mask}: the data has no such array (it holds {', '.join(arrays)})")
    value, shape = np.asarray(arrays[mask]), np.shape(arrays[label]) if shape is None else tuple(shape)
    if counted_positions(value, shape) is None:
        raise GradcError(f"{source}: --mask {mask} ({value.dtype}, {list(value.shape)}) marks neither each label of "
                         f"'{label}' {list(shape)} (nonzero: counted) nor, as integers, the length of each example's "
                         f"sequence")
    return mask


def accuracy_key(k: int, ks: Sequence[int]) -> str:
    """The name the top-``k`` accuracy is reported by among those at ``ks``: "acc" for top-1 alone, else "acc_topK"."""
    return "acc" if len(ks) == 1 and k == 1 else f"acc_top{k}"


class ScoreTally:
    """Top-k hits and, for the mIoU, the confusion matrix of every batch's counted rows, summed over the whole set
    (the set's, not a mean of the batches')."""

    def __init__(self, topk: Sequence[int], miou: bool, f1: bool = False):
        self.correct, self.counted = dict.fromkeys(topk, 0), 0
        self.unscored = 0   # counted rows with a NaN score: no class is above a NaN, so each counted as right
        self.miou, self.f1, self.matrix = miou, f1, None

    def add(self, scores: np.ndarray, labels: np.ndarray) -> None:
        self.counted += len(labels)
        if np.issubdtype(scores.dtype, np.floating):
            self.unscored += int(np.isnan(scores).any(axis=1).sum())
        for k, hits in top_k_hits(scores, labels, self.correct).items():
            self.correct[k] += hits
        if self.miou or self.f1:
            batch = confusion(scores, labels)
            self.matrix = batch if self.matrix is None else self.matrix + batch

    def results(self) -> dict:
        """"acc" (top-1 alone) or "acc_topK" each, with the mIoU "miou" and "class_iou" (a list by class), with F1
        class_f1's means and list."""
        results = {accuracy_key(k, self.correct): right / max(self.counted, 1) for k, right in self.correct.items()}
        if self.miou:
            ious, results["miou"] = class_iou(np.zeros((0, 0)) if self.matrix is None else self.matrix)
            results["class_iou"] = ious
        if self.f1:
            results.update(class_f1(np.zeros((0, 0)) if self.matrix is None else self.matrix))
        # 0 right of 0 is no accuracy (it was 0); NaN scores are none either (they were counted right: accuracy 1)
        why = ("no label is counted (each masked out, or its ignore_index)" if not self.counted else
               f"the scores of {self.unscored:,} of the {self.counted:,} counted rows hold NaN" if self.unscored
               else "")
        if why:
            undefined = [key for key, value in results.items() if not isinstance(value, list)]
            warnings.warn(f"{why}: {', '.join(undefined)} undefined (nan)", GradcNotice, stacklevel=2)
            results.update({key: math.nan if key in undefined else [None] * len(value)
                            for key, value in results.items()})
        return results
