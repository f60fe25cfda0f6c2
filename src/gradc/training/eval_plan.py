"""An evaluation's plan (what runs: gradc.training.evaluation.plan makes it) and its fitting to a data set's labels:
the class axis, the labels in range, the mask of the labels counted; and the metrics asked of an evaluation beside
its scalars (``EvalMetrics``), which ``gradc evaluate`` and the trainer's evaluation after each epoch share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import GradcError, closest
from ..ir import Program
from .accuracy import CLASS_F1_KEYS, accuracy_key, checked_mask, class_axis, counted_positions
from .ctc_eval import CTC_KEYS, CtcSpec, ctc_names
from .data import Dataset, OneBatch
from .detections import map_key, parse_iou
from .heads import Head, with_loss_head_names
from .keypoints import PCK, pcks
from .labels import check_indices, label_error, out_of_range
from .multilabel import KEYS as MULTILABEL_KEYS
from .multilabel import MultiLabel, of_output
from .ranking import item_ids, ranking_keys
from .retrieval import recall_key
from .roc import ROC_KEYS
from .set_metrics import loss_lengths


class UnknownFetchError(GradcError):
    """A fetched name that is no var of the program: a slip in what was asked, not a fault of the program."""


def check_fetch_names(program: Program, fetch: Sequence[str]) -> None:
    """Each of ``fetch`` is a var of ``program`` (declared in a block, or written by an op): one that is not is
    refused, with the name it is likeliest a slip for (the plan kept only what the forward part computes, so a
    misspelt name was dropped in silence)."""
    known = {name for block in program.blocks for name in block.vars}
    known |= {name for block in program.blocks for op in block.ops for name in op.output_names()}
    for name in fetch:
        if name not in known:
            close = closest(name, known)
            raise UnknownFetchError(f"--fetch '{name}': not a var of the program"
                                    + (f" (did you mean '{close}'?)" if close else ""))


@dataclass
class EvalPlan:
    program: Program                   # the forward part, pruned to what the scalars and scores need
    feeds: list[str]                   # the data's arrays the program takes
    scalars: list[str]                 # averaged over the examples, the losses (if any) first
    losses: list[str] = field(default_factory=list)   # several: the loss is their sum
    unfed: dict[str, str] = field(default_factory=dict)   # a loss left out -> the input the data does not hold
    scores: str | None = None          # class scores (accuracy), along ``axis``
    label: str | None = None           # the data's array of class labels
    label_computed: bool = False       # ``label`` is a var the program computes from the data: fetched, not read
    axis: int | None = -1              # None: the axis the labels' shape leaves out (a model without a loss op)
    ignore_index: int | None = None    # labels not counted
    topk: list[int] = field(default_factory=list)
    miou: bool = False                 # the set's confusion matrix of the scores against the labels, and its mIoU
    f1: bool = False                   # each class's precision, recall and F1 from that matrix, and their means
    mask: str | None = None            # the data's array marking the labels counted (a tagger's real tokens)
    recall: tuple[str, str] | None = None   # query and gallery embeddings, for recall@k over the whole set
    recall_at: list[int] = field(default_factory=list)
    ranking: tuple[str, ...] | None = None   # scores, relevance (and query ids): NDCG@k, MRR over the whole set
    ranking_at: list[int] = field(default_factory=list)
    roc: tuple[str, str] | None = None   # a score an example and the data's labels: the set's ROC AUC
    keypoints: tuple[str, ...] | None = None   # predicted and true (x, y) (and visibility): mean error, PCK
    pck_at: list[PCK] = field(default_factory=list)
    detections: tuple[str, ...] | None = None   # NMS rows, true boxes and classes: mAP at each IoU of iou_at
    iou_at: list[float] = field(default_factory=list)
    detection_counts: str | None = None   # the NMS op's rows of each image
    multilabel: MultiLabel | None = None   # a multi-label loss's scores and 0/1 labels: micro and macro F1
    heads: list[Head] = field(default_factory=list)   # with the scores' own: each head's accuracy, and all right
    ctc: CtcSpec | None = None         # a CTC recogniser's decode against its labels: seq_acc, cer, norm_edit_dis
    # from_set_means': scalars recomputed from the set's mean (a PSNR of its MSE), with their mean and ops
    derived: dict[str, tuple[str, Program]] = field(default_factory=dict)


@dataclass
class EvalMetrics:
    """What an evaluation reports beside its scalars: the top-k accuracy (``topk``), the mIoU, a two-tower model's
    recall@k (``recall``: query and gallery, at each k of ``topk``), a ranker's NDCG@k and MRR (``ranking``: scores,
    relevance[, query ids]), a score's ROC AUC and average precision (``roc``: score, labels), with the labels and
    the mask they count."""
    topk: list[int] = field(default_factory=list)
    miou: bool = False
    recall: tuple[str, str] | None = None
    label: str | None = None
    mask: str | None = None
    ignore_index: int | None = None
    ranking: tuple[str, ...] | None = None
    roc: tuple[str, str] | None = None
    f1: bool = False
    keypoints: tuple[str, ...] | None = None   # predicted and true (x, y) (and visibility): mean error, PCK
    pck: list[PCK | float] = field(default_factory=list)   # PCK's distances (1 when none is)
    threshold: float | None = None   # a multi-label model's cut, in its scores' terms (default: 0.5 or logit 0)
    scores: str | None = None   # the class scores the accuracy is of (default: the loss's cross entropy's)
    ctc: tuple[str, str, int | None] | None = None   # an exported recogniser's labels, lengths (and blank)
    detections: tuple[str, ...] | None = None   # a detector's NMS rows, true boxes and classes: mAP
    iou: list[float] = field(default_factory=list)   # the mAP's IoU thresholds (0.5 when none is)

    def named_arrays(self) -> list[tuple[str, str]]:
        """(option, array) for each of the data's arrays the metrics read whether or not the program does (a
        ranker's relevance and query ids, a detector's labels, the --label and --mask named)."""
        sizes = [pck.size for pck in pcks(self.pck) if pck.size] if self.keypoints else []
        return ([("--ranking", name) for name in (self.ranking or ())[1:]]
                + [("--roc", name) for name in (self.roc or ())[1:]]
                + [("--keypoints", name) for name in (self.keypoints or ())[1:]] + [("--pck", name) for name in sizes]
                + [("--ctc", name) for name in (self.ctc or ())[:2]]
                + [("--detections", name) for name in (self.detections or ())[1:]]
                + [(option, name) for option, name in (("--label", self.label), ("--mask", self.mask)) if name])

    def kept(self) -> list[str]:
        """The data's arrays the metrics read whether or not the program does: kept where unread arrays are left out
        (--label and --mask were, and then said to be missing)."""
        return [name for _, name in self.named_arrays()]

    def check_arrays(self, data: Dataset | OneBatch) -> None:
        """Refuse, naming every array the data holds, an array the metrics name that it does not hold: said before
        the unread arrays are left out, which would leave the one meant out of the list."""
        held = data_arrays(data)
        for option, name in self.named_arrays():
            if name not in held:
                close = closest(name, held)
                raise GradcError(f"{data.source}: {option} {name}: the data has no such array (it holds "
                                 f"{', '.join(held)}{f'; did you mean {close!r}?' if close else ''})")

    def lower_names(self) -> list[str]:
        """Those of its names lower is better of: a pose model's mean keypoint error, a recogniser's CER."""
        return (["mean_error"] if self.keypoints else []) + (["cer"] if self.ctc else [])

    def watched(self, program: Program) -> tuple[list[str], list[str]]:
        """The names early stopping may watch in ``program``'s evaluation, and those lower is better of: the heads'
        of several hard-label losses, a warpctc op's decode's (its CER lower-better)."""
        ctc = ctc_names(program)
        return with_loss_head_names(program, self.names()) + ctc, self.lower_names() + ctc[1:2]

    def names(self) -> list[str]:
        """The names its numbers are reported by where the program's scores allow them (higher is better for each but
        lower_names'):
        recall@K, ndcg@K, hit@K, mrr and query_auc, roc_auc and average_precision, the accuracy ("acc" for k 1
        alone, else "acc_topK") and "miou"."""
        ks = sorted(set(self.topk))
        names = [recall_key(k) for k in ks or [1]] if self.recall else []
        names += ranking_keys(ks) if self.ranking else []
        names += list(ROC_KEYS) if self.roc else []
        names += [pck.key for pck in pcks(self.pck)] + ["mean_error"] if self.keypoints else []
        names += list(CTC_KEYS) if self.ctc else []
        names += [map_key(threshold) for threshold in parse_iou(self.iou)] if self.detections else []
        if ks and (self.miou or not (self.recall or self.ranking or self.roc or self.ctc or self.detections)):
            names += [accuracy_key(k, ks) for k in ks] + list(MULTILABEL_KEYS)   # a multi-label model's, not both
        return names + (["miou"] if self.miou else []) + (list(CLASS_F1_KEYS) if self.f1 else [])


def fit_labels(program: Program, evaluation: EvalPlan, data: Dataset | OneBatch, mask: str | None,
               ignore_index: int | None) -> None:
    """Fit ``evaluation`` to ``data``'s labels: the class axis their shape leaves out, ``ignore_index``, a model
    without a loss op's labels in its class range, and ``mask`` read; a mask without labels or a k past the class
    count is refused."""
    if evaluation.label and evaluation.axis is None and (tags := of_output(
            evaluation.program, evaluation.scores, evaluation.label, data_arrays(data)[evaluation.label])):
        evaluation.multilabel, evaluation.scores, evaluation.label, evaluation.topk = tags, None, None, []
    if evaluation.label_computed:
        _fit_computed_labels(evaluation, mask, ignore_index, data.source)
    elif evaluation.label:
        labels = data_arrays(data)[evaluation.label]
        if evaluation.axis is None:
            evaluation.axis = class_axis(declared_shape(evaluation.program, evaluation.scores), np.shape(labels))
        if ignore_index is not None:
            evaluation.ignore_index = ignore_index
        _check_scored_labels(program, evaluation, labels, data)
        if mask is None:
            mask = _loss_lengths(evaluation, data_arrays(data), np.shape(labels))
        evaluation.mask = checked_mask(data_arrays(data), mask, evaluation.label, data.source)
        for head in evaluation.heads[1:]:
            if head.axis is None:
                head.axis = class_axis(declared_shape(evaluation.program, head.scores),
                                       np.shape(data_arrays(data)[head.label]))
        if evaluation.heads:
            evaluation.heads[0].axis, evaluation.heads[0].ignore_index = evaluation.axis, evaluation.ignore_index
    elif mask is not None and evaluation.ranking:   # a listwise ranker's padded entries, a catalogue's padding item
        relevance = np.asarray(data_arrays(data)[evaluation.ranking[1]])
        entries = declared_shape(evaluation.program, evaluation.ranking[0])[-1:]
        # a row's length left open (-1): the mask's own, to which each batch's scores are held (RankingTally.add)
        length = entries[0] if entries and entries[0] >= 0 else (np.shape(data_arrays(data).get(mask, ())) or (0,))[-1]
        rows = [relevance.shape[0], length]
        evaluation.mask = checked_mask(data_arrays(data), mask, evaluation.ranking[1], data.source,
                                       rows if item_ids(relevance, rows) else None)
    elif mask is not None:
        raise GradcError(f"{data.source}: --mask {mask}: no class scores are scored against labels, so no labels to "
                         f"leave out")
    classes = classes_scored(evaluation)
    if evaluation.topk and classes > 0 and max(evaluation.topk) > classes:
        raise GradcError(f"top-{max(evaluation.topk)} accuracy of {classes} classes ('{evaluation.scores}'): every "
                         f"example would count as right (give k up to {classes})")


def _fit_computed_labels(evaluation: EvalPlan, mask: str | None, ignore_index: int | None, source: str) -> None:
    """Labels the program computes (a captioner's next tokens): the loss op checks their range as it runs; a mask of
    the data's shape cannot mark them."""
    if ignore_index is not None:
        evaluation.ignore_index = ignore_index
    if mask is not None:
        raise GradcError(f"{source}: --mask {mask}: the labels '{evaluation.label}' are computed by the program, not "
                         f"read from the data, so a mask of the data cannot mark them (leave padding out with "
                         f"--ignore-index N)")


def _loss_lengths(evaluation: EvalPlan, arrays, label_shape) -> str | None:
    """The lengths the loss's token count is masked by, when they mark the labels: the accuracy counts those tokens
    too (not the padding past them) unless --mask says otherwise."""
    lengths = loss_lengths(evaluation.program, evaluation.losses, list(arrays))
    return lengths if lengths and counted_positions(np.asarray(arrays[lengths]), label_shape) is not None else None


def reported(results: dict, evaluation: EvalPlan) -> dict[str, float]:
    """An evaluation's numbers as a training run reports them each epoch: its scalars, then each metric asked (the
    accuracy, the mIoU, recall@k, micro and macro F1, mAP); not the examples, nor the lists by class or label."""
    metrics = {name: value for name, value in results.items() if name != "examples" and not isinstance(value, list)}
    return {**{name: metrics.pop(name) for name in evaluation.scalars}, **metrics}


def _check_scored_labels(program: Program, evaluation: EvalPlan, labels, data: Dataset | OneBatch) -> None:
    """Labels scored against a model's output (no loss op to check them against): in its class range."""
    item = getattr(data, "item", "feed var")
    check_indices(program, {evaluation.label: labels}, data.source, item)
    classes = classes_scored(evaluation)
    # an ignore_index (padding in a tagger's labels, a segmentation map's borders) is left out of the accuracy
    ignore = evaluation.ignore_index
    bad = out_of_range(labels, classes, ignore) if classes > 0 else None
    if bad is not None:
        allowed = f"0 to {classes - 1}" + (f", or {ignore} (the ignore_index)" if ignore is not None else
                                           " (--ignore-index N leaves the labels N out, a segmentation map's 255)")
        raise label_error(data.source, item, evaluation.label, bad,
                          f"the model's output '{evaluation.scores}' scores {classes} classes", allowed)


def classes_scored(evaluation: EvalPlan) -> int:
    """The class count the scores' declared shape gives (-1: unknown)."""
    shape = declared_shape(evaluation.program, evaluation.scores)
    return shape[evaluation.axis] if shape else -1


def declared_shape(program: Program, name: str) -> list[int]:
    return list(getattr(program.global_block.find_var(name), "shape", None) or [])


def data_arrays(data: Dataset | OneBatch) -> dict:
    return data.feed if isinstance(data, OneBatch) else data.arrays


def only_read(data: Dataset | OneBatch, names: list[str]) -> Dataset | OneBatch:
    """The data without the arrays the program does not read (an inference model's labels)."""
    arrays = {name: value for name, value in data_arrays(data).items() if name in names}
    if isinstance(data, OneBatch):
        return OneBatch(arrays, data.source)
    if not arrays:
        raise GradcError(f"{data.source}: holds none of the program's inputs (it holds {', '.join(data_arrays(data))})")
    examples = {name: value for name, value in arrays.items() if name not in data.fixed}
    lods = {f"{name}@LOD0": data.sequences[name] for name in examples if name in data.sequences}
    kept = Dataset({**examples, **lods}, data.source, {name: value for name, value in arrays.items()
                                                       if name in data.fixed}, data.episodes)
    kept.item = data.item
    return kept
