"""Metrics over a whole data set, not means over its batches: chunk_eval's precision, recall and F1, as Paddle's
ChunkEvaluator accumulates them, from the chunk counts summed over every batch (a mean of the batches' F1s weighs a
batch of few chunks as one of many); the auc ops' counts, from zero for each evaluation; a scalar computed from a
batch's mean (a PSNR of its MSE), from the set's mean; and a ratio to a count of the data (F.cross_entropy's mean over
the tokens not ignore_index, a language model's perplexity), as the set's sum over the set's count."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np

from ..executor import Scope
from ..ir import Program
from ..ir.types import NUMPY_DTYPE_NAMES
from ..shapes import numel
from .history import default_fetch, scalar
from .programs import computed_from_data, prune

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


def per_count(program: Program, scalars: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Each of ``scalars`` an elementwise_div of two scalars writes whose divisor is computed from the fed data alone
    (the count of the labels not ignore_index), with its dividend and that count: a batch of many padded tokens
    weighs less in the set's mean than its examples say."""
    block = program.global_block
    writers = {name: op for op in block.ops for name in op.output_names()}
    from_data = computed_from_data(block)

    def is_scalar(name: str) -> bool:
        var = block.find_var(name)
        return var is not None and var.shape is not None and numel(var.shape) == 1

    found = {}
    for name in scalars:
        op = writers.get(name)
        if op is None or op.type != "elementwise_div" or not all(map(is_scalar, op.input_names())):
            continue
        (dividend,), (count,) = op.input("X"), op.input("Y")
        if count in from_data and dividend not in from_data:
            found[name] = (dividend, _unguarded(writers, count))
    return found


def sums_of_ratios(program: Program, scalars: Sequence[str]) -> dict[str, tuple[float, list[tuple[float, str]]]]:
    """Each of ``scalars`` that is no per_count ratio itself but a sum of scaled scalars one of which is (a masked
    token mean plus a penalty by example: Show-Attend-Tell's loss), as its constant and its (coefficient, term) pairs:
    its set value is theirs, each term's the set's own (a ratio's sums, else the mean by example)."""
    block = program.global_block
    written = Counter(name for op in block.ops for name in op.output_names())
    # a var written twice, or in place, is a term as it is: its fetched value is the last, not the one a sum read
    writers = {name: op for op in block.ops for name in op.output_names()
               if written[name] == 1 and name not in op.input_names()}
    direct = per_count(program, scalars)
    found = {}
    for name in scalars:
        terms: list[tuple[float, str]] = []
        constant = _linear_terms(block, writers, name, 1.0, terms)
        if name not in direct and len(terms) > 1 and per_count(program, [term for _, term in terms]):
            found[name] = (constant, terms)
    return found


def _linear_terms(block, writers: dict, name: str, coefficient: float, terms: list) -> float:
    """``name`` as a constant plus ``coefficient``-scaled scalar terms (appended to ``terms``), through the
    scalar additions, subtractions and scales that write it; returns the constant."""
    op = writers.get(name)
    var = block.find_var(name)
    if op is None or var is None or var.shape is None or numel(var.shape) != 1:
        terms.append((coefficient, name))
        return 0.0
    if op.type in ("elementwise_add", "elementwise_sub") and all(
            (v := block.find_var(n)) is not None and v.shape is not None and numel(v.shape) == 1
            for n in op.input_names()):
        sign = 1.0 if op.type == "elementwise_add" else -1.0
        return (_linear_terms(block, writers, op.input("X")[0], coefficient, terms)
                + _linear_terms(block, writers, op.input("Y")[0], sign * coefficient, terms))
    if op.type == "scale" and not op.input("ScaleTensor"):
        scale, bias = float(op.attrs.get("scale", 1.0)), float(op.attrs.get("bias", 0.0))
        shift = bias if op.attrs.get("bias_after_scale", True) else scale * bias
        return coefficient * shift + _linear_terms(block, writers, op.input("X")[0], coefficient * scale, terms)
    terms.append((coefficient, name))
    return 0.0


def _unguarded(writers: dict, count: str) -> str:
    """The count without a guard against a batch with nothing to count, which would add to the set's count for each
    such batch: F.cross_entropy's count + (count == 0), a masked task loss's maximum(count, 1) or clip(count, min=1)
    (a multi-task batch without one task's labels)."""
    op = writers.get(count)
    if (op is not None and op.type == "clip" and not op.input("Min") and not op.input("Max")
            and op.attrs.get("min", 0) > 0 and op.attrs.get("max", 0) >= 1e30):
        return op.input("X")[0]
    if op is None or op.type not in ("elementwise_add", "elementwise_max"):
        return count
    (left,), (right,) = op.input("X"), op.input("Y")
    if op.type == "elementwise_max":
        constant = [name for name in (left, right) if writers.get(name) is not None and not writers[name].input_names()]
        return (right if constant == [left] else left) if len(constant) == 1 else count
    cast = writers.get(right)
    test = writers.get(cast.input("X")[0]) if cast is not None and cast.type == "cast" else None
    return left if test is not None and test.type == "equal" and test.input("X") == [left] else count


def auc_counts(program: Program) -> tuple[list[str], set[str]]:
    """The count vars of the program's auc ops (each run adds to them), and the AUCs whose counts span every batch
    run (slide_steps 0: paddle.static.auc's first output)."""
    counts, whole_set = [], set()
    for op in program.global_block.ops:
        if op.type == "auc":
            counts += op.input("StatPos") + op.input("StatNeg")
            if op.attrs.get("slide_steps") == 0:
                whole_set.update(op.output("AUC"))
    return counts, whole_set


@contextmanager
def counting_from_zero(scope: Scope, counts: list[str], program: Program):
    """An evaluation's auc ops count its examples alone, and training's counts are as they were after it; counts the
    scope lacks (a model's parameter file holds none, as Paddle's .pdparams) are zeros of their declared shape for
    the evaluation only."""
    saved = {name: scope[name] for name in counts if name in scope}
    block = program.global_block
    for name in counts:
        var = block.var(name)
        scope[name] = (np.zeros_like(saved[name]) if name in saved else
                       np.zeros(var.shape, NUMPY_DTYPE_NAMES[var.dtype]))
    try:
        yield
    finally:
        for name in counts:
            if name in saved:
                scope[name] = saved[name]
            else:
                del scope[name]


def of_set_means(program: Program, scalars: Sequence[str], losses: Sequence[str]) -> dict[str, str]:
    """Each of ``scalars`` (a loss aside: Paddle averages the batches' losses) computed by scalar ops alone from one
    mean over the whole batch (a PSNR of the batch's mean squared error), and the mean's name: the set's value is
    that of the set's mean, as one batch of every example gives it, not a mean of the batches' values."""
    block = program.global_block
    writers = {name: op for op in block.ops for name in op.output_names()}

    def is_scalar(name: str) -> bool:
        var = block.find_var(name)
        return var is not None and var.shape is not None and numel(var.shape) == 1

    def mean_under(name: str) -> str | None:
        op = writers.get(name)
        if op is None or not all(is_scalar(out) for out in op.output_names()):
            return None
        if op.type == "mean" or op.type == "reduce_mean" and op.attrs.get("reduce_all"):
            return name if block.find_var(name).dtype in NUMPY_DTYPE_NAMES else None   # fed back as numpy
        varying = [arg for arg in op.input_names() if writers.get(arg) is None or writers[arg].input_names()]
        return mean_under(varying[0]) if len(varying) == 1 else None   # constants aside, one scalar it is made of
    found = {name: mean_under(name) for name in scalars if name not in losses}
    return {name: mean for name, mean in found.items() if mean not in (None, name)}


def from_set_means(program: Program, scalars: Sequence[str], losses: Sequence[str]) -> dict[str, tuple[str, Program]]:
    """Each of ``scalars`` of_set_means finds, with its mean and the ops that compute it from the mean (pruned once:
    a plan is evaluated every epoch)."""
    derived = of_set_means(program, scalars, losses)
    return {name: (mean, prune(program, [name], [mean])) for name, mean in derived.items()}


def at_set_means(executor, scope: Scope, derived: dict[str, tuple[str, Program]],
                 means: dict[str, float]) -> dict[str, float]:
    """The ``derived`` scalars (from_set_means') recomputed by their ops from the set's means."""
    results = {}
    for name, (mean, ops) in derived.items():
        var = ops.global_block.find_var(mean)
        fed = np.full(var.shape, means[mean], dtype=NUMPY_DTYPE_NAMES[var.dtype])
        (value,) = executor.run(ops, {mean: fed}, [name], scope)
        results[name] = scalar(name, value)
    return results


def set_kinds(program: Program, fetch: Sequence[str], executor, scope: Scope) -> dict:
    """History's ratios, last_of, averaged and derive for ``fetch`` of a training program (``executor`` and ``scope``
    recompute a derived scalar from its mean): its epoch values are then the set's."""
    derived = from_set_means(program, fetch, default_fetch(program))
    summed = sums_of_ratios(program, fetch)
    terms = [term for _, pairs in summed.values() for _, term in pairs]
    ratios = per_count(program, [*fetch, *terms])
    return {"ratios": ratios, "last_of": auc_counts(program)[1] & set(fetch), "sums": summed,
            "averaged": list(dict.fromkeys([*(mean for mean, _ in derived.values()),
                                            *(term for term in terms if term not in ratios)])),
            "derive": (lambda means: at_set_means(executor, scope, derived, means)) if derived else None}


def loss_lengths(program: Program, losses: Sequence[str], feeds: Sequence[str]) -> str | None:
    """The one fed array of lengths whose sequence_mask counts the tokens a loss is divided by (a translation
    model's target lengths): the positions past them are padding, which the accuracy should not count either."""
    writers = {name: op for op in program.global_block.ops for name in op.output_names()}
    found = set()
    for _, count in per_count(program, losses).values():
        pending, seen = [count], set()
        while pending:
            op = writers.get(pending.pop())
            if op is None or id(op) in seen:
                continue
            seen.add(id(op))
            if op.type == "sequence_mask":
                found.update(name for name in op.input("X") if name in feeds)
            pending.extend(op.input_names())
    return found.pop() if len(found) == 1 else None
