"""The options that ask an evaluation for its metrics beside its scalars (the top-k accuracy, the mIoU, a two-tower
model's recall@k, a ranker's NDCG@k and MRR, a score's ROC AUC, a pose model's keypoint error and PCK, and the labels
and mask they count), shared by `gradc evaluate` and `gradc train --eval`."""

from __future__ import annotations

import math

import click

from ..errors import GradcError
from ..training.ctc_args import parse_ctc
from ..training.eval_plan import EvalMetrics
from ..training.keypoints import PCK, parse_keypoints, parse_pck
from ..training.ranking import parse_ranking
from ..training.retrieval import parse_pair
from ..training.roc import parse_roc
from .detection_options import DETECTION_OPTIONS


def _topk(ctx, param, values: tuple[str, ...]) -> list[int]:
    """Every k of every --topk, in order, once: `--topk 1,5` and `--topk 1 --topk 5` alike."""
    ks = []
    for value in values:
        try:
            ks += [int(k) for k in value.split(",") if k.strip()]
        except ValueError:
            raise click.BadParameter(f"'{value}': give k values separated by commas, e.g. 1,5") from None
        if not ks or min(ks) < 1:
            raise click.BadParameter(f"'{value}': each k is 1 or more")
    return list(dict.fromkeys(ks))


def _ranking(ctx, param, value: str | None) -> tuple[str, ...] | None:
    try:
        return parse_ranking(value) if value is not None else None
    except GradcError as exc:
        raise click.BadParameter(str(exc).removeprefix(f"--ranking {value!r}: ")) from None


def _roc(ctx, param, value: str | None) -> tuple[str, str] | None:
    try:
        return parse_roc(value) if value is not None else None
    except GradcError as exc:
        raise click.BadParameter(str(exc).removeprefix(f"--roc {value!r}: ")) from None


def _ctc(ctx, param, value: str | None) -> tuple[str, str, int | None] | None:
    try:
        return parse_ctc(value) if value is not None else None
    except GradcError as exc:
        raise click.BadParameter(str(exc).removeprefix(f"--ctc {value!r}: ")) from None


def _keypoints(ctx, param, value: str | None) -> tuple[str, ...] | None:
    try:
        return parse_keypoints(value) if value is not None else None
    except GradcError as exc:
        raise click.BadParameter(str(exc).removeprefix(f"--keypoints {value!r}: ")) from None


def _pck(ctx, param, values: tuple[str, ...]) -> list[PCK]:
    try:
        return [parse_pck(value) for value in values]
    except GradcError as exc:
        raise click.BadParameter(str(exc).removeprefix("--pck ")) from None


def _finite(ctx, param, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value}: give a finite number")
    return value


def check_dependents(pck: list, keypoints: tuple[str, ...] | None, iou: list, detections: tuple | None) -> None:
    """--pck is a distance of --keypoints' PCK, --iou a threshold of --detections' mAP: without them, unused."""
    for given, option, needed, needs in ((pck, "--pck", keypoints, "--keypoints"), (iou, "--iou", detections,
                                                                                   "--detections")):
        if given and needed is None:
            raise click.UsageError(f"{option}: only with {needs}")


def metric_options(topk_default: tuple[str, ...], topk_help: str):
    """--label, --scores, --ignore-index, --mask, --miou, --f1, --recall, --ranking, --roc, --keypoints, --pck, --ctc,
    --threshold, --detections, --iou and --topk (``topk_default``: the k without it)."""
    options = [
        click.option("--label", help="The data's array of class labels, for the accuracy of a model without a "
                     "loss (default: its one array the model does not read); SCORES=LABEL,SCORES=LABEL pairs each "
                     "output of several with its labels (a QA model's start and end: acc_LABEL of each, acc_all "
                     "of both right)."),
        click.option("--scores", metavar="NAME", help="The class scores the accuracy is of (default: those of the "
                     "loss's cross entropy): one head of a multi-head model, each task's accuracy from its own head, "
                     "scored against --label (default: the labels of the program's cross entropy)."),
        click.option("--ignore-index", type=int, metavar="N", help="Leave labels N out of the accuracy (a "
                     "segmentation map's 255 borders; default: the loss op's ignore_index)."),
        click.option("--mask", metavar="NAME", help="The data's array marking the labels to count (a tagger's "
                     "padded tokens left out): nonzero where one counts, of the labels' shape, or each example's "
                     "sequence length (default: the lengths whose sequence_mask counts the loss's tokens)."),
        click.option("--miou", is_flag=True, help="Also the mean IoU and each class's (miou, class_iou), from the "
                     "confusion matrix of the best-scored class against the label summed over the whole set (a "
                     "segmentation map's)."),
        click.option("--f1", is_flag=True, help="Also each class's precision, recall and F1 and their means over the "
                     "classes labelled or predicted (macro_precision, macro_recall, macro_f1, class_f1), from the "
                     "same confusion matrix (a class-imbalanced classifier's)."),
        click.option("--recall", metavar="QUERY,GALLERY", help="Recall@k of a two-tower model instead of the "
                     "accuracy: the share of examples whose QUERY embedding finds their own GALLERY embedding among "
                     "the k most similar (dot product) of the whole set, for each k of --topk (captions to images: "
                     "TEXT_EMB,IMAGE_EMB)."),
        click.option("--ranking", metavar="SCORES,RELEVANCE[,QUERY]", callback=_ranking, help="NDCG@k and hit@k "
                     "(each k of --topk), MRR and the mean AUC of each query (query_auc) of a ranker instead of the "
                     "accuracy, over the whole set: SCORES the program's, [N, L] a query's list a row (--mask its "
                     "real entries), or [N] a document an example with QUERY the data's query ids; RELEVANCE the "
                     "data's graded labels (> 0: relevant), or with scores [N, L] one integer a row, the index of "
                     "its relevant entry (a next-item model's scores over the catalogue and the item that came "
                     "next)."),
        click.option("--roc", metavar="SCORE,LABEL", callback=_roc, help="The ROC AUC (roc_auc) and average "
                     "precision of a score an example over the whole set instead of the accuracy: SCORE the "
                     "program's, [N] or [N, 1] (an anomaly detector's reconstruction error or distance, a binary "
                     "classifier's logit), higher for the positive class; LABEL the data's labels, > 0 positive (an "
                     "anomaly)."),
        click.option("--keypoints", metavar="PRED,TRUE[,VISIBLE]", callback=_keypoints, help="A pose model's "
                     "mean keypoint error (mean_error) and PCK (pck@T, the share within T) over the whole set: PRED "
                     "the program's (x, y) of each keypoint, [N, K, 2] (a heatmap's argmax or soft-argmax), or its "
                     "heatmaps [N, K, H, W] (their argmax, in heatmap pixels); TRUE the data's (x, y), [N, K, 2]; "
                     "VISIBLE the data's visibility (a target weight, one value a keypoint), > 0 where counted."),
        click.option("--pck", multiple=True, metavar="T[*SIZE]", callback=_pck, help="--keypoints: PCK's "
                     "distance, in the coordinates' units (heatmap pixels for an argmax of the heatmaps), or T*SIZE: "
                     "that share of the data's SIZE array, a length an example or a keypoint (its head segment's "
                     "for PCKh@0.5: 0.5*head_size). Repeatable; default 1."),
        click.option("--ctc", metavar="LABEL,LENGTHS[,BLANK]", callback=_ctc, help="A CTC recogniser's "
                     "greedy decode (the best class a step, repeats merged, the blank dropped) against the data's "
                     "padded labels LABEL [N, L] and their LENGTHS, over the whole set: seq_acc (read exactly), cer "
                     "(edit distances over label lengths) and norm_edit_dis (PaddleOCR's); of an exported model's "
                     "one output of rank 3, [N, T, C] scores. A program with one warpctc op is scored so without it; "
                     "BLANK (default: the op's, else 0) names the blank class."),
        click.option("--threshold", type=float, metavar="T", callback=_finite, help="A multi-label model's "
                     "label is a yes where its score is above T, in the scores' terms: a probability strictly "
                     "between 0 and 1 (a sigmoid's output, bce_loss's input), or any finite logit "
                     "(sigmoid_cross_entropy_with_logits's input). Default 0.5 for probabilities, 0 for logits (the "
                     "same cut: sigmoid(0) = 0.5)."),
        *DETECTION_OPTIONS,
        click.option("--topk", default=topk_default, show_default=bool(topk_default), multiple=True,
                     callback=_topk, metavar="K[,K...]", help=topk_help)]

    def apply(command):
        for option in reversed(options):
            command = option(command)
        return command
    return apply


def metrics_asked(label, ignore_index, mask, miou, recall, topk, ranking=None, roc=None, f1=False, keypoints=None,
                  pck=(), threshold=None, scores=None, ctc=None, detections=None, iou=()) -> EvalMetrics:
    """The options' values as the EvalMetrics an evaluation takes."""
    return EvalMetrics(list(topk), miou, parse_pair(recall) if recall else None, label, mask, ignore_index, ranking,
                       roc, f1, keypoints, list(pck), threshold, scores, ctc, detections, list(iou))
