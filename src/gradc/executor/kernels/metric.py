"""Kernels of gradc.ops.metric."""

from __future__ import annotations

import numpy as np

from ...ops.metric import auc_count_sizes
from . import kernel


@kernel("accuracy")
def accuracy(k):
    """A row is correct when its label is among its top-k indices (Paddle's kernel; Out is not read)."""
    indices, label = k.x("Indices"), k.x("Label")
    if indices.ndim != 2 or label.shape[:1] != indices.shape[:1]:
        raise ValueError(f"accuracy needs Indices [batch, k] and one label per row, got Indices "
                         f"{list(indices.shape)} and Label {list(label.shape)}")
    total = indices.shape[0]
    correct = int((indices == label.reshape(total, -1)[:, :1]).any(axis=1).sum())
    return {"Accuracy": np.array(correct / total if total else 0.0, np.float32),
            "Correct": np.array(correct, np.int32), "Total": np.array(total, np.int32)}


@kernel("auc")
def auc(k):
    """Paddle's kernel: each row's last Predict column, times num_thresholds and truncated, picks a bucket of the
    positive (Label > 0) or negative (Label == 0) histogram; other labels are not counted. With slide_steps, the
    oldest of the kept batches leaves the window first. The AUC is the trapezoid area under the ROC curve of the
    window's histogram. InsTagWeight[0] == 0 marks a batch of fake data, which counts nothing here. Paddle 3.3.1
    is broken there: with slide_steps it counts the batch into its step but not into the window's sum, from which
    it is subtracted later (negative counts, an AUC outside [0, 1]); without, it leaves AUC unwritten (0)."""
    predict, label = k.x("Predict"), k.x("Label").reshape(-1)
    thresholds, steps = k.attr("num_thresholds"), k.attr("slide_steps")
    buckets = thresholds + 1
    sizes = auc_count_sizes(thresholds, steps)   # without slide_steps: the first buckets, written back [1, buckets]
    positives, negatives = (k.x(slot).astype(np.int64).reshape(-1) for slot in ("StatPos", "StatNeg"))
    if positives.size not in sizes or negatives.size != positives.size:
        raise ValueError(f"auc with num_thresholds={thresholds}, slide_steps={steps} needs StatPos and StatNeg of "
                         f"{' or '.join(map(str, sizes))} counts, got {positives.size} and {negatives.size}")
    if steps == 0:
        positives, negatives = positives[:buckets], negatives[:buckets]
    if predict.ndim != 2 or len(label) != len(predict):
        raise ValueError(f"auc needs Predict [batch, 1 or 2] and one label per row, got {list(predict.shape)} and "
                         f"{len(label)} labels")
    scores = predict[:, -1]
    if not ((scores >= 0) & (scores <= 1)).all():
        raise ValueError("auc needs the probabilities in Predict's last column to lie in [0, 1]")
    # the product rounds in Predict's dtype, as Paddle's
    bins = (scores * scores.dtype.type(thresholds)).astype(np.int64)
    tag = k.optional("InsTagWeight")
    if tag is not None and not tag.size:
        raise ValueError("auc's InsTagWeight is empty: its first value says whether the batch is real (0: fake)")
    counted = tag is None or tag.reshape(-1)[0] != 0
    window = slice(steps * buckets, (steps + 1) * buckets)
    if steps:
        oldest = int(positives[(steps + 1) * buckets]) % steps * buckets
        for stat in (positives, negatives):
            stat[window] -= stat[oldest:oldest + buckets]
            stat[oldest:oldest + buckets] = 0
    else:
        oldest = 0
    if counted:
        np.add.at(positives, oldest + bins[label > 0], 1)
        np.add.at(negatives, oldest + bins[label == 0], 1)
    if steps:
        positives[window] += positives[oldest:oldest + buckets]
        negatives[window] += negatives[oldest:oldest + buckets]
    value = _roc_area(positives[window], negatives[window])
    if steps:
        positives[-1] += 1
        negatives[-1] += 1
    shape = k.x("StatPos").shape if steps else (1, buckets)
    return {"AUC": np.array(value), "StatPosOut": positives.reshape(shape), "StatNegOut": negatives.reshape(shape)}


def _roc_area(positives: np.ndarray, negatives: np.ndarray) -> float:
    """Trapezoids from the highest bucket down, normalised by the totals when both are nonzero."""
    true_pos = np.concatenate([[0], np.cumsum(positives[::-1], dtype=np.float64)])
    false_pos = np.concatenate([[0], np.cumsum(negatives[::-1], dtype=np.float64)])
    area = float(np.sum(np.diff(false_pos) * (true_pos[1:] + true_pos[:-1]) / 2.0))
    return area / true_pos[-1] / false_pos[-1] if true_pos[-1] > 0 and false_pos[-1] > 0 else area
