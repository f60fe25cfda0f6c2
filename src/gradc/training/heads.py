"""Several classification heads scored at once: a question-answering model's start and end positions, a multi-task
model's labels. Each head's top-1 accuracy by its labels' name (acc_LABEL) and the share of examples every head gets
right (acc_all: a span's exact match); the heads found from the program's loss ops, or paired by the user with the
outputs of an inference model (--label SCORES=LABEL,SCORES=LABEL)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import FeedError, GradcError
from .accuracy import scored_rows
from .detections import nms_rows
from .labels import classifiers


@dataclass
class Head:
    scores: str
    label: str
    axis: int | None          # None: the axis the labels' shape leaves out (an inference model's output)
    ignore_index: int | None = None


def paired(label: str | None) -> list[tuple[str, str]]:
    """The (scores, labels) pairs of ``--label SCORES=LABEL[,SCORES=LABEL...]``; none for a plain array's name."""
    if not label or "=" not in label:
        return []
    pairs = [tuple(part.strip() for part in item.split("=", 1)) for item in label.split(",")]
    if any(len(pair) != 2 or not all(pair) for pair in pairs):
        raise GradcError(f"evaluation: --label {label}: give SCORES=LABEL pairs, comma-separated (an output of class "
                         f"scores and the data's array of its labels)")
    return pairs


def score_outputs(block) -> list[str]:
    """The fetch targets of rank 2 or more: an inference model's outputs that may be class scores (not a detector's
    kept boxes [M, 6], which no 6 classes score)."""
    targets = [name for op in block.ops if op.type == "fetch" for name in op.input("X")]
    return [name for name in targets if len(getattr(block.find_var(name), "shape", None) or ()) > 1
            and name not in nms_rows(block)]


def pairing(scores: Sequence[str]) -> str:
    """What to give for several outputs of class scores: each paired with the data's array of its labels."""
    return (f"the model has several outputs of class scores ({', '.join(scores)}): pair each with the data's array "
            f"of its labels, --label {','.join(f'{name}=LABEL' for name in scores)}")


def pairing_hint(block) -> str:
    """The pairing to give, after a refusal that found no class scores, where several outputs may be them."""
    scores = score_outputs(block)
    return f"; {pairing(scores)}" if len(scores) > 1 else ""


def named_heads(forward, names: Sequence[str], pairs: list[tuple[str, str]]) -> list[Head]:
    """The heads the user paired, each output computed by the program and each labels' array in the data."""
    block = forward.global_block
    written = {name for op in block.ops for name in op.output_names()}
    for scores, label in pairs:
        if scores not in written:
            raise GradcError(f"evaluation: --label {scores}={label}: '{scores}' is not computed by the program")
        if label not in names:
            raise GradcError(f"evaluation: --label {scores}={label}: the data has no array '{label}' (it holds "
                             f"{', '.join(names)})")
    return [Head(scores, label, None) for scores, label in pairs]


def loss_heads(forward, names: Sequence[str], first: str) -> list[Head]:
    """The hard-label classification losses of the program after the one whose labels are ``first``, each scored
    against another of the data's arrays."""
    heads, seen = [], {first}
    for found in classifiers(forward):
        if found.label in names and found.label not in seen:
            seen.add(found.label)
            heads.append(Head(found.scores, found.label, found.axis, found.ignore_index))
    return heads


def head_key(head: Head) -> str:
    return f"acc_{head.label}"


def with_loss_head_names(program, names: list[str]) -> list[str]:
    """The evaluation's ``names`` and, where it reports an accuracy and the program has several hard-label losses,
    the names their heads are reported by (early stopping may watch them before the data shows which labels it
    holds)."""
    labels = list(dict.fromkeys(found.label for found in classifiers(program))) if "acc" in names else []
    return names + ([*(f"acc_{label}" for label in labels), "acc_all"] if len(labels) > 1 else [])


class HeadTally:
    """Each head's top-1 hits over its counted labels and, where every head has one label an example, the examples
    whose every counted label is its best-scored class."""

    def __init__(self, heads: Sequence[Head]):
        self.heads = list(heads)
        self.hits, self.counted = [0] * len(self.heads), [0] * len(self.heads)
        self.all_right, self.examples, self.joint = 0, 0, True

    def add(self, scores: Sequence[np.ndarray], labels: Sequence[np.ndarray]) -> None:
        rights = []
        for index, (head, value, label) in enumerate(zip(self.heads, scores, labels)):
            rows = scored_rows(value, label, head.axis, head.ignore_index)
            if rows is None:
                raise FeedError(f"'{head.label}' ({np.asarray(label).dtype}, {np.size(label)} values) does not "
                                 f"label the rows of class scores '{head.scores}' {list(np.shape(value))} (give "
                                 f"integer class labels)")
            right = rows[0].argmax(axis=1) == rows[1]
            self.hits[index] += int(right.sum())
            self.counted[index] += len(right)
            rights.append(right if len(right) == np.size(label) == len(label) else None)
        if self.joint and all(right is not None for right in rights):
            self.all_right += int(np.logical_and.reduce(rights).sum())
            self.examples += len(rights[0])
        else:   # a tagger's many labels an example, or one left out: no one verdict an example
            self.joint = False

    def results(self) -> dict[str, float]:
        numbers = {head_key(head): hits / counted if counted else 0.0
                   for head, hits, counted in zip(self.heads, self.hits, self.counted)}
        return {**numbers, **({"acc_all": self.all_right / self.examples} if self.joint and self.examples else {})}
