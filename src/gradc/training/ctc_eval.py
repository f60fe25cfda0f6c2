"""A CTC recogniser's metrics over the whole set (an OCR line reader's, a speech model's): its greedy decode (the best
class at each step within the input length, repeats merged, the blank dropped: what ctc_align gives) against the
labels, each padded row read within its length. ``seq_acc`` is the share of sequences read exactly, ``cer`` the
summed edit distances over the summed label lengths (the character error rate), ``norm_edit_dis`` PaddleOCR's
RecMetric's: 1 - the mean of each distance over the longer of the two sequences. Found by itself for a program with
one warpctc op (its Logits, LogitsLength, Label, LabelLength and blank), or asked of an exported model
(``--ctc LABEL,LENGTHS[,BLANK]``): its one output of rank 3, [N, T, C] scores, every step of T read."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import GradcError, GradcNotice
from ..ir import Program
from .heads import score_outputs

CTC_KEYS = ("seq_acc", "cer", "norm_edit_dis")


@dataclass
class CtcSpec:
    scores: str                    # [N, T, C] scores (logits or probabilities), [T, N, C] when time_major
    label: str                     # [N, L] padded labels
    label_len: str                 # [N] (or [N, 1]) label lengths
    input_len: str | None = None   # [N] (or [N, 1]) input lengths; None: every step of T
    time_major: bool = False
    blank: int = 0
    from_data: tuple[str, ...] = ()   # of those, the data's arrays (read from the batch, not fetched)

    def fetched(self) -> list[str]:
        named = [self.scores, self.label, self.label_len, *([self.input_len] if self.input_len else [])]
        return [name for name in dict.fromkeys(named) if name not in self.from_data]


def find_ctc(program: Program, names: Sequence[str], asked: tuple[str, str, int | None] | None) -> CtcSpec | None:
    """The CTC decode to score: ``asked``'s labels against the one output of rank 3 of an exported model, or the one
    warpctc op of the program (its labels and lengths, fed or computed), which ``asked`` may name the blank of."""
    block = program.global_block
    ctcs = [op for op in block.ops if op.type == "warpctc" and op.input("LogitsLength") and op.input("LabelLength")]
    if asked is None and len(ctcs) != 1:
        return None
    if ctcs and (asked is None or (asked[0], asked[1]) == (ctcs[0].input("Label")[0], ctcs[0].input("LabelLength")[0])):
        op = ctcs[0]
        spec = CtcSpec(op.input("Logits")[0], op.input("Label")[0], op.input("LabelLength")[0],
                       op.input("LogitsLength")[0], True, int(op.attrs.get("blank", 0)))
    else:
        label, lengths, _ = asked
        for name in (label, lengths):
            if name not in names:
                raise GradcError(f"evaluation: --ctc: the data has no array '{name}' (it holds {', '.join(names)})")
        outputs = [name for name in score_outputs(block) if len(block.find_var(name).shape or ()) == 3]
        if len(outputs) != 1:
            found = f"it has {', '.join(outputs)}" if outputs else "it has none"
            raise GradcError(f"evaluation: --ctc scores an exported model's one output of rank 3, [N, T, C] class "
                             f"scores a step ({found})")
        spec = CtcSpec(outputs[0], label, lengths)
    if asked is not None and asked[2] is not None:
        spec.blank = asked[2]
    written = {name for op in block.ops for name in op.output_names()}
    spec.from_data = tuple(name for name in spec.fetched() if name in names and name not in written)
    return spec


def ctc_hint(block, scores: str, unread: Sequence[str]) -> str:
    """For an output of scores a step, [N, T, C]: the --ctc that reads it as a recogniser's, against the data's padded
    labels and their lengths (two arrays the model does not read, or the arrays to name)."""
    if len(getattr(block.find_var(scores), "shape", None) or ()) != 3:
        return ""
    named = ",".join(unread) if len(unread) == 2 else "LABEL,LENGTHS"
    return (f"; or, scores a step of a CTC recogniser ({scores} [N, T, C]), its greedy decode against padded labels "
            f"and their lengths: --ctc {named}")


def ctc_names(program: Program) -> list[str]:
    """The names a program's own warpctc op is scored by (early stopping may watch them, cer lower-better)."""
    return list(CTC_KEYS) if find_ctc(program, (), None) else []


class CtcTally:
    """Each sequence's edit distance between its greedy decode and its label, summed over the set."""

    def __init__(self, spec: CtcSpec):
        self.spec, self.count, self.exact, self.distance, self.length, self.normalised = spec, 0, 0, 0, 0, 0.0
        self.source = "data"

    def add(self, values: Mapping[str, np.ndarray], source: str) -> None:
        spec, self.source = self.spec, source
        scores = np.asarray(values[spec.scores])
        scores = scores.transpose(1, 0, 2) if spec.time_major else scores
        labels = np.asarray(values[spec.label]).reshape(scores.shape[0], -1)
        label_len = np.asarray(values[spec.label_len]).reshape(-1)
        steps = scores.shape[1]
        input_len = np.asarray(values[spec.input_len]).reshape(-1) if spec.input_len else np.full(len(scores), steps)
        if not len(label_len) == len(input_len) == len(scores):
            raise GradcError(f"{source}: --ctc: a batch gave {len(scores)} rows of scores '{spec.scores}', "
                             f"{len(label_len)} label lengths '{spec.label_len}': one each a sequence")
        if (label_len < 0).any() or (label_len > labels.shape[1]).any():
            raise GradcError(f"{source}: --ctc: label lengths '{spec.label_len}' must be in [0, {labels.shape[1]}] "
                             f"(the labels' padded width); they hold {label_len.min()} ... {label_len.max()}")
        best = scores.argmax(-1)
        for row, steps_read, label, size in zip(best, input_len, labels, label_len):
            read = row[:steps_read]
            read = read[np.r_[True, read[1:] != read[:-1]]]   # repeats merged, then the blank dropped
            read = read[read != spec.blank]
            distance = edit_distance(read, label[:size])
            self.count, self.exact = self.count + 1, self.exact + (distance == 0)
            self.distance, self.length = self.distance + distance, self.length + int(size)
            self.normalised += distance / max(len(read), int(size), 1)

    def results(self) -> dict[str, float]:
        if not self.length:   # no character to err on: undefined, as the other metrics with nothing to count
            warnings.warn(f"{self.source}: every label '{self.spec.label}' is empty (its lengths "
                          f"'{self.spec.label_len}' are 0): the CER is undefined (nan)", GradcNotice, stacklevel=2)
        cer = self.distance / self.length if self.length else math.nan
        return dict(zip(CTC_KEYS, (self.exact / self.count, cer, 1 - self.normalised / self.count)))


def edit_distance(first: np.ndarray, second: np.ndarray) -> int:
    """Levenshtein's: insertions, deletions and substitutions, each 1."""
    previous = np.arange(len(second) + 1)
    for i, item in enumerate(first, 1):
        current = np.empty_like(previous)
        current[0] = i
        for j, other in enumerate(second, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (item != other))
        previous = current
    return int(previous[-1])
