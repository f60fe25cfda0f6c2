"""Multi-label classification over a whole data set, as a text classifier's tags are scored: each label of each
example is a yes/no decision, a sigmoid cross-entropy's logit above 0 (F.binary_cross_entropy_with_logits) or a
bce_loss's probability above 0.5 (F.binary_cross_entropy), against the data's 0/1 labels. Micro precision, recall
and F1 from the counts summed over every label of every example; macro F1 the mean of each label's F1 (0 for a label
neither predicted nor present, as scikit-learn counts it); exact_match the share of examples whose every label is
right (subset accuracy). A threshold of the user's own (evaluate's ``threshold``) is in the scores' terms: a
probability in (0, 1), or any finite logit."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np

from .. import registry
from ..errors import GradcError, GradcNotice
from ..ir import Program
from .accuracy import f1_scores
from .labels import label_source

# op type -> (the scores' slot, whether they are probabilities rather than logits)
MULTILABEL_LOSSES = {"sigmoid_cross_entropy_with_logits": ("X", False), "bce_loss": ("X", True)}
_KEEPING_VALUES = {"assign", "reshape2", "squeeze2", "unsqueeze2", "flatten_contiguous_range"}
KEYS = ("micro_precision", "micro_recall", "micro_f1", "macro_f1", "exact_match")


class ThresholdError(GradcError):
    """A threshold the scores cannot be cut at (not finite, or a probability's outside (0, 1)), or no scores to cut."""


@dataclass(frozen=True)
class MultiLabel:
    scores: str            # logits or probabilities [N, C], a label a column
    label: str             # the data's array of 0/1 labels
    probabilities: bool    # a sigmoid's or bce_loss's scores in (0, 1), else logits
    threshold: float       # a score is a yes above it: 0.5 for probabilities, 0 for logits unless the user says
    ignore_index: int | None = None   # a label the loss leaves out (sigmoid_cross_entropy_with_logits': -100)

    @classmethod
    def of(cls, scores: str, label: str, probabilities: bool, ignore_index: int | None = None) -> MultiLabel:
        return cls(scores, label, probabilities, 0.5 if probabilities else 0.0, ignore_index)


def at_threshold(found: MultiLabel | None, threshold: float) -> MultiLabel:
    """``found`` cut at ``threshold`` instead, which must be finite and, for probabilities, strictly between 0 and 1
    (at 0 or 1 every label, or none, would be a yes)."""
    if found is None:
        raise ThresholdError(f"--threshold {threshold:g}: no multi-label scores to cut (a "
                             "sigmoid_cross_entropy_with_logits or bce_loss op against the data's 0/1 labels, or an "
                             "exported model's output the data's multi-hot labels label)")
    if not math.isfinite(threshold):
        raise ThresholdError(f"--threshold {threshold}: give a finite number")
    if found.probabilities and not 0 < threshold < 1:
        raise ThresholdError(f"--threshold {threshold:g}: the scores '{found.scores}' are probabilities: give a "
                             "value strictly between 0 and 1")
    return replace(found, threshold=float(threshold))


def find_multilabel(program: Program, names) -> MultiLabel | None:
    """The first multi-label loss of block 0 whose labels are the data's array (of ``names``)."""
    block = program.global_block
    for index, op in enumerate(block.ops):
        slot, probabilities = MULTILABEL_LOSSES.get(op.type, (None, None))
        if slot and op.input("Label") and op.input(slot):
            label = label_source(block, index, op.input("Label")[0])
            if label in names:
                ignored = op.attrs.get("ignore_index", registry.get(op.type).attrs.get("ignore_index"))
                return MultiLabel.of(op.input(slot)[0], label, probabilities, ignored)
    return None


def of_output(program: Program, scores: str, label: str, labels) -> MultiLabel | None:
    """A model without a loss op (an export) whose output ``scores`` the data's ``labels`` label one for one (multi-hot
    [N, C] of its shape, float or of several columns: not class indices; each from 0 to 1: not a regression's targets):
    scored as multi-label, at 0.5 when a sigmoid writes the output (probabilities), else at 0 (logits)."""
    declared = list(getattr(program.global_block.find_var(scores), "shape", None) or [])
    shape = np.shape(labels)
    if len(declared) < 2 or len(shape) != len(declared) or any(0 <= want != got for want, got in
                                                               zip(declared[1:], shape[1:])):
        return None
    labels = np.asarray(labels)
    if labels.dtype.kind != "f" and shape[-1] < 2:
        return None   # [N, 1] integer labels of one score: class indices
    if labels.size and (labels.min() < 0 or labels.max() > 1):
        return None   # values past 0 and 1 (a regression's targets): no yes/no labels
    return MultiLabel.of(scores, label, _sigmoid_writes(program, scores))


def _sigmoid_writes(program: Program, name: str) -> bool:
    """Whether a sigmoid writes ``name``, through ops that keep its values (Paddle 2's export appends a scale by 1,
    save_infer_model/scale_0.tmp_0, to each output; a reshape or squeeze of [N, 1])."""
    ops, at = program.global_block.ops, len(program.global_block.ops)
    while (at := next((i for i in range(at - 1, -1, -1) if name in ops[i].output_names()), -1)) >= 0:
        op = ops[at]   # the last writer before the reader: an op in place reads the value before it
        if op.type == "sigmoid":
            return True
        if not op.input("X") or not (op.type in _KEEPING_VALUES or op.type == "scale" and not op.input(
                "ScaleTensor") and op.attrs.get("scale", 1.0) == 1.0 and op.attrs.get("bias", 0.0) == 0.0):
            return False
        name = op.input("X")[0]
    return False


class MultiLabelTally:
    """Each label's true positives, false positives and false negatives, summed over every batch."""

    def __init__(self, found: MultiLabel):
        self.found, self.counts, self.exact, self.rows = found, None, 0, 0
        self.unscored = 0   # counted rows with a NaN score, which no threshold cuts

    def add(self, scores, labels, source: str) -> None:
        scores, labels = np.asarray(scores), np.asarray(labels)
        if scores.size != labels.size or not scores.ndim:
            raise GradcError(f"{source}: the labels '{self.found.label}' {list(labels.shape)} do not label the scores "
                             f"'{self.found.scores}' {list(scores.shape)} one to one")
        columns = scores.shape[-1] if scores.ndim > 1 else 1   # logits [N] (squeezed): one label an example
        labels = labels.reshape(-1, columns)
        # the labels the loss counts: not its ignore_index (compared truncated, as Paddle's kernel does)
        kept = np.ones(labels.shape, bool) if self.found.ignore_index is None else \
            labels.astype(np.int64) != self.found.ignore_index
        predicted = (scores.reshape(-1, columns) > self.found.threshold) & kept
        truth = (labels > 0.5) & kept   # soft labels: the side of 0.5 they are on
        counts = np.stack([(predicted & truth).sum(0), (predicted & ~truth).sum(0), (~predicted & truth).sum(0)])
        self.counts = counts if self.counts is None else self.counts + counts
        counted = kept.any(axis=1)   # an example whose every label is left out has no match to count
        self.exact += int(((predicted == truth).all(axis=1) & counted).sum())
        self.rows += int(counted.sum())
        if np.issubdtype(scores.dtype, np.floating):
            self.unscored += int((np.isnan(scores.reshape(-1, columns)) & kept).any(axis=1).sum())

    def results(self) -> dict:
        """{KEYS..., "label_f1": each label's F1}; nothing for an empty set."""
        if self.counts is None:
            return {}
        why = ("no label is counted (each its ignore_index)" if not self.rows else
               f"the scores of {self.unscored:,} of the {self.rows:,} counted rows hold NaN" if self.unscored else "")
        if why:   # NaN is above no threshold: each was a no
            warnings.warn(f"{why}: {', '.join(KEYS)} undefined (nan)", GradcNotice, stacklevel=2)
            return {**dict.fromkeys(KEYS, math.nan), "label_f1": [None] * self.counts.shape[1]}
        hits, false_alarms, misses = self.counts.astype(np.float64)
        label_f1 = f1_scores(hits, false_alarms, misses)
        tp, fp, fn = hits.sum(), false_alarms.sum(), misses.sum()
        return {"micro_precision": float(tp / (tp + fp)) if tp + fp else 0.0,
                "micro_recall": float(tp / (tp + fn)) if tp + fn else 0.0,
                "micro_f1": float(f1_scores(tp, fp, fn)), "macro_f1": float(label_f1.mean()),
                "exact_match": self.exact / self.rows if self.rows else 0.0, "label_f1": label_f1.tolist()}

