"""Running an evaluation's plan (evaluation.plan) over every batch of a data set: the scalars averaged by example, the
set's AUC, ratios and chunk F1, and the tallies of the top-k accuracy and mIoU, recall@k, a ranker's metrics, a
score's ROC AUC, a multi-label loss's F1, a CTC recogniser's decode and a detector's mAP."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from contextlib import contextmanager

import numpy as np

from ..errors import GradcError
from . import set_metrics
from .accuracy import ScoreTally, counted_positions, scored_rows
from .ctc_eval import CtcTally, ctc_hint
from .data import Dataset, OneBatch, examples, naming
from .detections import DetectionTally
from .eval_plan import EvalPlan
from .heads import HeadTally
from .history import scalar
from .keypoints import KeypointTally
from .multilabel import MultiLabelTally
from .ranking import RankingTally
from .retrieval import RecallTally
from .roc import RocTally
from .set_metrics import at_set_means, auc_counts, chunk_ratios, counting_from_zero, set_ratios


def evaluate_plan(executor, scope, evaluation: EvalPlan, data: Dataset | OneBatch,
                  batch_size: int | None = None) -> dict:
    """Run the plan over every example: {"examples", each scalar by name, "acc" (one k) or "acc_topK", and "miou"
    and "class_iou", or "recall@K", as planned}."""
    ratios = chunk_ratios(evaluation.program, evaluation.scalars)
    chunks = dict.fromkeys(sorted({count for _, counts in ratios.values() for count in counts}), 0)
    averaged = list(dict.fromkeys([*evaluation.scalars, *(mean for mean, _ in evaluation.derived.values())]))
    summed = set_metrics.sums_of_ratios(evaluation.program, evaluation.scalars)
    terms = [term for _, pairs in summed.values() for _, term in pairs]
    averaged = list(dict.fromkeys([*averaged, *terms]))
    counted = set_metrics.per_count(evaluation.program, [*evaluation.scalars, *terms])
    # summed apart from the averages, for the set's ratios: a count also fetched (--fetch) is averaged too
    parts = list(dict.fromkeys(part for pair in counted.values() for part in pair))
    scalar_fetches = averaged + parts
    towers = list(evaluation.recall or ())
    ranked, detected = list(evaluation.ranking or ())[:1], list(evaluation.roc or ())[:1]
    tagged = [evaluation.multilabel.scores] if evaluation.multilabel else []
    posed = list(evaluation.keypoints or ())[:1]
    others = [head.scores for head in evaluation.heads[1:]]
    decoded = evaluation.ctc.fetched() if evaluation.ctc else []
    boxed = [*evaluation.detections[:1], evaluation.detection_counts] if evaluation.detections else []
    fetches = (scalar_fetches + list(chunks) + towers + ranked + detected + tagged + posed + boxed + others + decoded
               + ([evaluation.scores] if evaluation.scores else [])
               + ([evaluation.label] if evaluation.label_computed else []))
    tags = MultiLabelTally(evaluation.multilabel) if tagged else None
    tags_at = len(scalar_fetches) + len(chunks) + len(towers) + len(ranked) + len(detected)
    retrieval = RecallTally(evaluation.recall_at)
    ranking = RankingTally(evaluation.ranking, evaluation.ranking_at, evaluation.mask)
    roc = RocTally(evaluation.roc)
    poses = KeypointTally(evaluation.keypoints, evaluation.pck_at) if posed else None
    read = CtcTally(evaluation.ctc) if evaluation.ctc else None
    boxes = DetectionTally(evaluation.detections, evaluation.iou_at) if boxed else None
    totals, sums = dict.fromkeys(averaged, 0.0), dict.fromkeys(parts, 0.0)
    tally, count = ScoreTally(evaluation.topk, evaluation.miou, evaluation.f1), 0
    heads, others_at = HeadTally(evaluation.heads), tags_at + len(tagged) + len(posed) + len(boxed)
    counts, whole_set = auc_counts(evaluation.program)
    last = {}
    with counting_from_zero(scope, counts, evaluation.program):
        for index, batch in enumerate(data.batches(0, batch_size or data.size)):
            size = 1 if getattr(data, "episodes", False) else examples(batch)   # an episode counts as one
            feed = {name: batch[name] for name in evaluation.feeds}
            with naming(data, f"evaluation batch {index + 1}"):
                values = executor.run(evaluation.program, feed, fetches, scope)
            for name, value in zip(averaged, values):
                last[name] = _batch_mean(name, value, size)
                totals[name] += last[name] * size
            for name, value in zip(parts, values[len(averaged):]):
                sums[name] += scalar(name, value)
            for name, value in zip(chunks, values[len(scalar_fetches):]):
                chunks[name] += int(np.sum(value))
            if towers:
                at = len(scalar_fetches) + len(chunks)
                retrieval.add(values[at], values[at + 1])
            if ranked:
                ranking.add(values[len(scalar_fetches) + len(chunks) + len(towers)], batch, data.source)
            if detected:
                roc.add(values[len(scalar_fetches) + len(chunks) + len(towers) + len(ranked)], batch, data.source)
            if tags:
                tags.add(values[tags_at], batch[evaluation.multilabel.label], data.source)
            if poses:
                poses.add(values[tags_at + len(tagged)], batch, data.source)
            if boxes:
                at = tags_at + len(tagged) + len(posed)
                boxes.add(values[at], values[at + 1], batch, data.source)
            if read:
                at = others_at + len(others)
                read.add({**batch, **dict(zip(decoded, values[at:at + len(decoded)]))}, data.source)
            if evaluation.scores:
                scores, labels = values[-2:] if evaluation.label_computed else (values[-1], batch[evaluation.label])
                tally.add(*_scored(scores, labels, batch, evaluation, data.source))
                if evaluation.heads:
                    with naming(data, f"evaluation batch {index + 1}"):
                        heads.add([scores, *values[others_at:others_at + len(others)]],
                                  [batch[head.label] for head in evaluation.heads])
            count += size
    means = {name: total / count for name, total in totals.items()}
    means.update(at_set_means(executor, scope, evaluation.derived, means) if count else {})
    means.update({name: sums[top] / sums[bottom] for name, (top, bottom) in counted.items() if sums[bottom]})
    means.update({name: constant + sum(weight * means[term] for weight, term in pairs)
                  for name, (constant, pairs) in summed.items()})
    results = {"examples": count, **{name: means[name] for name in evaluation.scalars}}
    results.update({name: last[name] for name in whole_set if name in last})   # the set's AUC, not a running mean
    results.update(set_ratios(ratios, chunks) if count else {})   # the set's chunk F1, not a mean of the batches'
    return {**results, **(tally.results() if evaluation.scores else {}),
            **(heads.results() if evaluation.heads else {}), **(retrieval.results() if towers else {}),
            **(ranking.results() if ranked else {}), **(roc.results() if detected else {}),
            **(tags.results() if tags else {}), **(poses.results() if poses else {}),
            **(read.results() if read else {}), **(boxes.results() if boxes else {})}


@contextmanager
def said_once(told: set[str]):
    """The warnings within, each said the first time only (its text added to ``told``): an evaluation after each
    epoch would repeat why a metric is undefined at every epoch."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for warning in caught:
        if str(warning.message) not in told:
            told.add(str(warning.message))
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)


def _batch_mean(name: str, value, size: int) -> float:
    """A fetched scalar, or the mean of a value of one number an example ([batch] or [batch, 1]: a density model's
    log-likelihood of each), which the set's mean then weighs by the batch's examples."""
    array = np.asarray(value)
    if array.size == size > 1 and array.shape[0] == size and array.dtype.kind in "biuf":
        return float(np.mean(array, dtype=np.float64))
    if array.size != 1:
        raise GradcError(f"fetched var '{name}' is {array.dtype}{list(array.shape)}: an evaluation averages scalars "
                         f"(a loss, an accuracy) or one number an example ([{size}] or [{size}, 1] in this batch) "
                         f"over the set; fetch other values with gradc run")
    return scalar(name, value)


def _scored(scores, labels, batch: Mapping, evaluation: EvalPlan, source: str) -> tuple[np.ndarray, np.ndarray]:
    labels = np.asarray(labels)
    counted = counted_positions(batch[evaluation.mask], labels.shape) if evaluation.mask else None
    rows = scored_rows(scores, labels, evaluation.axis, evaluation.ignore_index, counted)
    if rows is None:
        raise GradcError(f"{source}: '{evaluation.label}' ({labels.dtype}, {labels.size} values) does not label the "
                         f"rows of class scores '{evaluation.scores}' {list(np.shape(scores))} (give integer class "
                         f"labels){ctc_hint(evaluation.program.global_block, evaluation.scores, [])}")
    return rows
