"""chunk_eval's precision, recall and F1 over a whole data set, as Paddle's ChunkEvaluator accumulates them: from the
chunk counts summed over every batch (a mean of the batches' F1s weighs a batch of few chunks as one of many)."""

from __future__ import annotations

from collections.abc import Sequence

from ..ir import Program

RATIOS = ("Precision", "Recall", "F1-Score")
COUNTS = ("NumInferChunks", "NumLabelChunks", "NumCorrectChunks")


def chunk_ratios(program: Program, scalars: Sequence[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each of ``scalars`` that a chunk_eval op writes as a ratio: its slot and the op's three count vars."""
    found = {}
    for op in program.global_block.ops:
        if op.type != "chunk_eval" or not all(op.output(slot) for slot in COUNTS):
            continue
        counts = tuple(op.output(slot)[0] for slot in COUNTS)
        found.update({name: (slot, counts) for slot in RATIOS for name in op.output(slot) if name in scalars})
    return found


def set_ratios(ratios: dict[str, tuple[str, tuple[str, ...]]], totals: dict[str, int]) -> dict[str, float]:
    """The ratios from the summed counts (0 where nothing was inferred, labelled or matched, as Paddle's)."""
    results = {}
    for name, (slot, counts) in ratios.items():
        inferred, labelled, correct = (totals[count] for count in counts)
        precision = correct / inferred if inferred else 0.0
        recall = correct / labelled if labelled else 0.0
        f1 = 2 * precision * recall / (precision + recall) if correct else 0.0
        results[name] = dict(zip(RATIOS, (precision, recall, f1)))[slot]
    return results
