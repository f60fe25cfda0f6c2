"""Evaluation over a data set, as Paddle's Model.evaluate reports it: the loss (the mean over the examples, each batch
weighted by its size; a mean over the labels counted, the set's sum over their count), top-k accuracy where the
program's scores and the data's labels allow it, and the mean of any other fetched scalar (an auc op's AUC over
every batch: the set's, counted from zero; a chunk_eval op's precision, recall and F1 from its chunk counts summed
over every batch; a PSNR of a batch's MSE: from the set's MSE), and, asked, the set's mIoU or a two-tower model's
recall@k (retrieval.py), a ranker's NDCG@k and MRR (ranking.py), a score's ROC AUC (roc.py), or a pose model's
mean keypoint error and PCK (keypoints.py); a multi-label loss's
micro and macro F1 where the accuracy would be (multilabel.py). The forward part runs in test mode; ``gradc
evaluate``, ``gradc.evaluate`` and the trainer's evaluation after each epoch (``--eval``) are this, so their numbers
agree.

Accuracy needs class scores and labels (class_scores.py finds them): the scores and Label of the program's
cross-entropy op (the data's array, or a var the program computes from the data's values: a captioner's
caption[:, 1:]), or, in a saved
inference model (no loss), its one fetch target of rank >= 2 and the data's one integer array the model does not
read (or the array ``label`` names), the classes along the axis the labels' shape leaves out (the last, or a
segmentation map's 1: scores [N, C, H, W], labels [N, 1, H, W] or [N, H, W]). An example (a pixel) is right at top-k
when fewer than k classes score above its label; one labelled ``ignore_index`` (the loss op's, or the one given: a
segmentation map's 255 borders) is not counted."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence

from ..backward.loss import no_loss_hint
from ..errors import FeedError, GradcError, GradcNotice
from ..executor import Executor, Scope, randomness
from ..executor.feeding import program_inputs
from ..ir import Program
from .class_scores import find_scores
from .ctc_args import parse_ctc
from .ctc_eval import find_ctc
from .data import Dataset, OneBatch, as_data, check_fits
from .detections import count_var, detections_hint, parse_detections, parse_iou
from .eval_plan import EvalMetrics, EvalPlan, check_fetch_names, data_arrays, fit_labels, only_read
from .eval_run import evaluate_plan
from .heads import pairing_hint
from .history import default_fetch
from .keypoints import check_keypoints, keypoints_hint, parse_keypoints, pcks
from .labels import chosen_scores
from .multilabel import at_threshold, find_multilabel
from .programs import forward_part, missing_inputs, prune
from .ranking import check_ranking, parse_ranking
from .retrieval import check_towers, parse_pair
from .roc import check_roc, parse_roc
from .set_metrics import auc_counts, from_set_means
from .startup_values import load_after_startups, preloaded


def plan(program: Program, names: Sequence[str], fetch: Sequence[str] | None = None, losses: Sequence[str] = (),
         label: str | None = None, topk: Sequence[int] = (), miou: bool = False,
         recall: tuple[str, str] | None = None, test_mode: bool = True,
         ranking: tuple[str, ...] | None = None, roc: tuple[str, str] | None = None,
         f1: bool = False, keypoints: tuple[str, ...] | None = None, pck: Sequence = (),
         scores: str | None = None, ctc: tuple[str, str, int | None] | None = None,
         detections: tuple[str, ...] | None = None, iou: Sequence = ()) -> EvalPlan:
    """What evaluating ``program`` on data holding the arrays ``names`` runs: ``fetch`` (default: the ``losses``, as
    named_losses resolves them) averaged, and with ``topk`` the accuracy at each k (with ``miou`` the mIoU) where
    scores and labels are found; with ``recall`` (query, gallery) the recall@k of each k; with ``ranking`` (scores,
    relevance[, query ids]) NDCG@k and MRR; with ``roc`` (score, labels) the set's ROC AUC and average precision;
    with ``keypoints`` (predicted, true[, visibility]) the mean keypoint error and PCK at each of ``pck``; ``scores``:
    the class scores the accuracy is of (a multi-head model's head); a warpctc op's greedy decode scored, or with
    ``ctc`` (labels, lengths, blank) an exported recogniser's (ctc_eval.py); with ``detections`` (NMS rows, true
    boxes, their classes) the mAP at each IoU of ``iou``; in test mode unless ``test_mode`` is False (dropout on)."""
    # backward ops a loss is computed from stay (MAML's inner step, a gradient penalty), as export keeps them
    forward = forward_part(program, derivatives_of=[*losses, *(fetch or ())], test_mode=test_mode)
    block = forward.global_block
    written = {name for op in block.ops for name in op.output_names()}
    for name in losses:
        if name not in written:
            raise GradcError(f"evaluation: the loss '{name}' is not computed by the forward part of the program")
    unfed = {}
    metric = next((option for option, asked in (("--ranking", ranking), ("--recall", recall), ("--roc", roc),
                                                ("--keypoints", keypoints), ("--scores", scores),
                                                ("--detections", detections)) if asked), None)
    if metric:   # held-out data for a metric need not hold what the loss alone reads (a replay batch's inputs)
        unfed = _unfed_losses(forward, names, losses, metric)
        losses = [name for name in losses if name not in unfed]
        fetch = None if fetch is None else [name for name in fetch if name not in unfed]
    asked = list(fetch) if fetch is not None else losses
    scalars = [name for name in dict.fromkeys(asked) if name in written]
    if fetch and not scalars:
        raise GradcError(f"evaluation: none of the fetched vars ({', '.join(fetch) or 'none'}) is computed by the "
                         f"forward part of the program")
    feeds = [name for name in names if block.find_var(name) is not None]
    result = EvalPlan(forward, feeds, scalars, [name for name in losses if name in scalars], unfed)
    no_scores = recall or ranking or roc or ctc or detections   # --topk's k: recall@k's, NDCG@k's; NMS rows: boxes
    if miou or f1 or topk and not no_scores:
        if scores is None:
            find_scores(result, forward, names, label)
        else:
            result.scores = scores
            result.label, result.axis, result.ignore_index = chosen_scores(forward, names, label, scores)
        result.topk = sorted(set(topk)) if result.scores else []
        result.multilabel = None if result.scores else find_multilabel(forward, names)
        if f1 and not miou and result.multilabel:   # its F1s come without --f1, which is a single-label model's
            raise GradcError(f"evaluation: --f1 is a single-label classifier's F1 of each class; the multi-label "
                             f"loss of '{result.multilabel.scores}' is scored without it (micro_f1, macro_f1 and "
                             f"each label's label_f1)")
        if (miou or f1) and not result.scores:
            raise GradcError(f"evaluation: the {'mIoU' if miou else 'F1 of each class'} needs class scores and "
                             "labels: the program has no cross-entropy op whose labels the data holds, nor one output "
                             "of rank 2 or more (name the labels with --label NAME)")
        result.miou, result.f1 = miou, f1
    if recall:
        check_towers(forward, recall)
        result.recall, result.recall_at = recall, sorted(set(topk or [1]))
    if ranking:
        check_ranking(forward, names, ranking)
        result.ranking, result.ranking_at = ranking, sorted(set(topk or [1]))
    if roc:
        check_roc(forward, names, roc)
        result.roc = roc
    if keypoints:
        result.keypoints, result.pck_at = keypoints, pcks(pck)
        check_keypoints(forward, names, keypoints, [t.size for t in result.pck_at if t.size])
    result.ctc = find_ctc(forward, names, ctc)
    if detections:
        result.detections, result.iou_at = detections, parse_iou(iou)
        result.detection_counts = count_var(forward, names, detections)
    needed = [*result.scalars, *(recall or ()), *([result.scores] if result.scores else []),
              *(result.ctc.fetched() if result.ctc else []),
              *([result.label] if result.label_computed else []), *(ranking or ())[:1],
              *(roc or ())[:1], *(keypoints or ())[:1], *(detections or ())[:1],
              *([result.multilabel.scores] if result.multilabel else []), *(head.scores for head in result.heads)]
    if not needed:
        raise GradcError(f"evaluation: no loss picked by itself ({no_loss_hint(program)}) and no class scores to "
                         "score against labels; name the loss (--loss NAME), the scalars to average (--fetch NAME) or "
                         f"the labels (--label NAME){keypoints_hint(forward, names) or pairing_hint(block)}"
                         f"{detections_hint(forward, names)}")
    result.program = prune(forward, needed, feeds, from_data=True)
    result.scalars = [name for name in result.scalars if result.program.global_block.find_var(name) is not None]
    result.derived = from_set_means(result.program, result.scalars, result.losses)
    return result


def _unfed_losses(forward: Program, names: Sequence[str], losses: Sequence[str], metric: str) -> dict[str, str]:
    """The losses needing an input the data does not hold, each with the first such input; a note names each."""
    unfed = {}
    for name in losses:
        if missing := missing_inputs(forward, [name], names):
            unfed[name] = missing[0]
            warnings.warn(f"the loss '{name}' needs '{missing[0]}', which the data does not hold: {metric} is "
                          f"evaluated without the loss", GradcNotice, stacklevel=4)
    return unfed


def trainer_plan(program: Program, data: Dataset | OneBatch, fetch: Sequence[str], metrics: EvalMetrics) -> EvalPlan:
    """The plan of the trainer's evaluation after each epoch: ``fetch`` and ``metrics`` over ``data``, which holds
    only arrays the program declares (a training program reads every array of its data; an inference model may
    not)."""
    ranked = set(metrics.kept())   # a ranker's relevance and query ids, a detector's labels: it need not read them
    unknown = [name for name in sorted(data_arrays(data)) if program.global_block.find_var(name) is None
               and name not in ranked]
    if unknown:
        raise FeedError(f"{data.source}: '{unknown[0]}' is not a var of block 0 of the program (its inputs: "
                        f"{', '.join(program_inputs(program.global_block))})")
    try:
        asks = metrics.threshold is not None or metrics.scores   # a threshold, or scores named, ask for the accuracy
        topk = metrics.topk or ([1] if asks else [])
        evaluation = plan(program, sorted(data_arrays(data)), fetch, named_losses(program, None), metrics.label,
                          topk, metrics.miou, metrics.recall, ranking=metrics.ranking, roc=metrics.roc,
                          f1=metrics.f1, keypoints=metrics.keypoints, pck=metrics.pck, scores=metrics.scores,
                          ctc=metrics.ctc, detections=metrics.detections, iou=metrics.iou)
    except GradcError as exc:
        raise GradcError(f"{data.source}: {exc}") from None
    if metrics.threshold is not None:   # a ThresholdError as it is: the option's value, not the data, is wrong
        evaluation.multilabel = at_threshold(evaluation.multilabel, metrics.threshold)
    return evaluation



def named_losses(program: Program, loss: str | Sequence[str] | None, fetch: Sequence[str] = ()) -> list[str]:
    """The loss given (one name or several), else those gradc train reports (none: the program has no loss; none
    either when a forward program's guess, a PSNR after the loss, is fetched: a metric), said in a notice."""
    named = [loss] if isinstance(loss, str) else list(loss or [])
    if named:
        return named
    if set(guessed := default_fetch(program)) & set(fetch):
        warnings.warn(f"no loss: {', '.join(guessed)}, the loss gradc would pick, is fetched (--fetch), so averaged "
                      f"as a metric; name the loss with --loss", GradcNotice, stacklevel=3)
        return []
    return default_fetch(program, notice=True)


def evaluate(program: Program | str | os.PathLike, data, params=None, startup=(), scope: Scope | None = None, *,
             batch_size: int | None = 32, fetch: Sequence[str] | None = None,
             loss: str | Sequence[str] | None = None,
             label: str | None = None, topk: Sequence[int] = (1,), strict: bool = False,
             executor: Executor | None = None, seed: int | None = None, ignore_index: int | None = None,
             miou: bool = False, mask: str | None = None, recall: str | tuple[str, str] | None = None,
             test_mode: bool = True, ranking: str | tuple[str, ...] | None = None,
             roc: str | tuple[str, str] | None = None, f1: bool = False, threshold: float | None = None,
             keypoints: str | tuple[str, ...] | None = None, pck: Sequence = (), scores: str | None = None,
             ctc: str | tuple[str, str, int | None] | None = None, detections: str | tuple[str, ...] | None = None,
             iou: Sequence = ()) -> dict:
    """Evaluate a (forward, training or saved inference) program over ``data`` (a path, a dict of arrays, a
    Dataset) with the values of ``params`` (a file) and the ``startup`` programs. A dict: "examples"; "loss",
    "loss_var" (its var) and "loss_vars" ([its var]) when the program has a loss (several ``loss`` names: "loss" the
    sum of their means, "loss_var" None, "loss_vars" the names); the top-k accuracy ("acc" for k=1 alone, else
    "acc_top1", "acc_top5", ...) where scores and labels allow it; the mean of each loss and of each ``fetch``ed
    scalar by name; with several heads (hard-label losses against several of the data's arrays, or ``label`` pairing
    outputs "SCORES=LABEL,SCORES=LABEL"), "acc_LABEL" of each and "acc_all", all right (heads.py). ``miou``:
    "miou" and "class_iou" (each class's IoU, None for one neither labelled nor predicted) from the confusion matrix
    of the whole set; ``f1``: "macro_precision", "macro_recall", "macro_f1" and "class_f1" from it. ``recall``
    ("QUERY,GALLERY"): "recall@K" for each k of ``topk``
    instead of the accuracy; ``ranking`` ("SCORES,RELEVANCE[,QUERY]"): "ndcg@K" and "hit@K" for each k, "mrr" and
    "query_auc" (ranking.py), ``mask`` marking a listwise ranker's real entries; ``roc`` ("SCORE,LABEL"): "roc_auc"
    and "average_precision" of a score an example over the whole set (roc.py); ``keypoints``
    ("PRED,TRUE[,VISIBLE]"): "mean_error" and "pck@T" for each T of ``pck`` (default 1; "T*SIZE": "pck@T*SIZE",
    within T times the data's SIZE of the example) (keypoints.py). A program with one warpctc op gives its greedy
    decode's "seq_acc", "cer" and "norm_edit_dis"; ``ctc`` ("LABEL,LENGTHS[,BLANK]") an exported recogniser's
    (ctc_eval.py). ``detections`` ("ROWS,BOXES,LABELS"): "map@T" and "class_ap@T" for each IoU T of ``iou``
    (default 0.5) (detections.py).
    ``threshold``: a multi-label model's label is a yes where its score is above it (default 0.5 for probabilities,
    0 for logits; multilabel.py). ``scores``: the class scores the accuracy is of (one head of a multi-head model;
    default: the loss's cross entropy's), against ``label`` (default: the labels of the program's cross entropy). Labels
    equal to ``ignore_index`` (default: the loss op's), and those the data's array ``mask`` marks 0 or puts past a
    length, are left out of both.
    The data is checked before the first batch. ``seed``: random ops without a seed of their own (a VAE's noise)
    draw, from the startup programs on, what they draw after paddle.seed(seed). ``test_mode`` False keeps dropout
    dropping and batch norm normalising by the batch, as the program trains."""
    from ..io import load
    from .params import read_files, require_values, run_startup
    path = None if isinstance(program, Program) else str(program)
    program = program if isinstance(program, Program) else load(program, lazy=False)
    check_fetch_names(program, fetch or ())
    scope, executor = Scope() if scope is None else scope, executor or Executor()
    if seed is not None:
        randomness.seed(seed)
    startups = [startup] if isinstance(startup, (Program, str, os.PathLike)) else list(startup)
    params = [params] if isinstance(params, (str, os.PathLike)) else list(params or ())
    values = read_files(params, program, strict, startups) if params else {}   # a later file's value wins
    preloaded(values, scope)   # a startup may derive from them (AMP O2's master weights)
    for init in startups:
        run_startup(executor, init, scope)
    if values:
        load_after_startups(executor, scope, startups, values)
    data = as_data(data, "data", program, others=True)   # a .csv's labels of an exported model are no var of it
    losses = named_losses(program, loss, fetch or ())
    fetch = list(dict.fromkeys([*losses, *(fetch or [])]))
    names = sorted(data.feed if isinstance(data, OneBatch) else data.arrays)
    try:
        evaluation = plan(program, names, fetch, losses, label, topk, miou,
                          parse_pair(recall) if isinstance(recall, str) else recall, test_mode,
                          parse_ranking(ranking) if isinstance(ranking, str) else ranking,
                          parse_roc(roc) if isinstance(roc, str) else roc, f1,
                          parse_keypoints(keypoints) if isinstance(keypoints, str) else keypoints, pck, scores,
                          parse_ctc(ctc) if isinstance(ctc, str) else ctc,
                          parse_detections(detections) if isinstance(detections, str) else detections, iou)
    except GradcError as exc:
        raise GradcError(f"{data.source}: {exc}") from None
    check_fits(evaluation.program, only_read(data, evaluation.feeds), batch_size or data.size, labels_of=program,
               evaluated=True)
    fit_labels(program, evaluation, data, mask, ignore_index)
    if threshold is not None:
        evaluation.multilabel = at_threshold(evaluation.multilabel, threshold)
    # the auc ops count from zero in an evaluation: a model's file holds no counts
    require_values(evaluation.program, scope, [*evaluation.feeds, *auc_counts(evaluation.program)[0]], params, path)
    means = evaluate_plan(executor, scope, evaluation, data, batch_size)
    results = {"examples": means.pop("examples")}
    if evaluation.losses:
        one = evaluation.losses[0] if len(evaluation.losses) == 1 else None
        results.update(loss=sum(means[name] for name in evaluation.losses), loss_var=one,
                       loss_vars=evaluation.losses)
    if evaluation.unfed:
        results["unfed_losses"] = evaluation.unfed
    accuracy = {name: value for name, value in means.items() if name not in evaluation.scalars}
    return {**results, **accuracy, **{name: means[name] for name in evaluation.scalars}}
