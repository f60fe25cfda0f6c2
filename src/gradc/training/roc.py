"""The ROC AUC and average precision of a score an example over the whole set (``gradc evaluate --roc``): an anomaly
detector's reconstruction errors or distances, a binary classifier's logits, against the data's labels (> 0: the
positive class, an anomaly). The AUC is the share of positive-negative pairs the score puts in order, a tie counting
half; the average precision is the precision at each distinct score, from the highest down, weighted by the recall
it adds (scikit-learn's average_precision_score). Both need the whole set: a mean of the batches' would not be
them."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import GradcError, GradcNotice
from ..ir import Program
from .metric_inputs import checked_inputs
from .ranking import ordered_pairs_auc

ROC_KEYS = ("roc_auc", "average_precision")


def parse_roc(value: str) -> tuple[str, str]:
    """``SCORE,LABEL``: the program's score of each example and the data's labels."""
    names = tuple(name.strip() for name in value.split(","))
    if len(names) != 2 or not all(names):
        raise GradcError(f"--roc {value!r}: give SCORE,LABEL (the program's score of each example, [N] or [N, 1], "
                         f"and the data's labels, > 0 for the positive class)")
    return names


def check_roc(program: Program, names: Sequence[str], roc: tuple[str, str]) -> None:
    """The score computed by the forward part, one an example; the labels in the data."""
    score, var = roc[0], checked_inputs(program, names, "--roc", roc)
    shape = list(var.shape or [])
    if len(shape) > 2 or len(shape) == 2 and shape[1] != 1:
        raise GradcError(f"evaluation: --roc: '{score}' {shape} is not one score an example: give [N] or [N, 1] (a "
                         f"reconstruction's error a row: the mean over its features, "
                         f"F.mse_loss(reduction='none').mean(axis=1))")


class RocTally:
    """Every batch's scores and labels, ranked over the whole set at the end."""

    def __init__(self, roc: tuple[str, str]):
        self.roc, self.source = roc, "data"
        self.scores: list[np.ndarray] = []
        self.labels: list[np.ndarray] = []
        self.unranked = 0   # NaN scores, which no ranking places

    def add(self, scores, batch: Mapping, source: str) -> None:
        scores, labels = np.asarray(scores, np.float64).reshape(-1), np.asarray(batch[self.roc[1]]).reshape(-1)
        self.source = source
        if scores.size != labels.size:
            raise GradcError(f"{source}: --roc: a batch gave {scores.size} scores '{self.roc[0]}' and {labels.size} "
                             f"labels '{self.roc[1]}': one each an example")
        self.unranked += int(np.isnan(scores).sum())
        self.scores.append(scores)
        self.labels.append(labels > 0)

    def results(self) -> dict[str, float]:
        """The AUC and average precision; undefined (NaN, a note saying why) for NaN scores or labels of one class,
        which stopped gradc train --eval, unsaved, as an error."""
        scores, positive = np.concatenate(self.scores), np.concatenate(self.labels)
        why = (f"the scores '{self.roc[0]}' hold {self.unranked:,} NaN: nothing to rank by" if self.unranked else
               f"every label '{self.roc[1]}' is {'positive (> 0)' if positive.any() else 'negative (0 or less)'}"
               if positive.all() or not positive.any() else "")
        if why:
            warnings.warn(f"{self.source}: --roc: {why}: the AUC and the average precision are undefined (nan)",
                          GradcNotice, stacklevel=2)
            return dict.fromkeys(ROC_KEYS, math.nan)
        return dict(zip(ROC_KEYS, (ordered_pairs_auc(scores, positive), _average_precision(scores, positive))))


def _average_precision(scores: np.ndarray, positive: np.ndarray) -> float:
    """sum over the distinct scores, highest first, of precision x the recall they add (tied examples together)."""
    order = np.argsort(-scores, kind="stable")
    ranked, hits = scores[order], positive[order]
    # compared, not subtracted: two infinite scores are a tie (inf - inf is NaN, which would split them)
    last_of_tie = np.r_[np.flatnonzero(ranked[1:] != ranked[:-1]), ranked.size - 1]
    true_positives = np.cumsum(hits)[last_of_tie]
    precision = true_positives / (last_of_tie + 1.0)
    recall_added = np.diff(np.r_[0, true_positives]) / hits.sum()
    return float(np.sum(precision * recall_added))
