"""Metrics a training program computes beside its loss: accuracy (Paddle's paddle.static.accuracy writes
top_k_v2, then this) and auc (paddle.static.auc, counting into persistable histograms). No gradient."""

from __future__ import annotations

import math

from ..ir import VarType
from ..registry import NO_GRAD, defop
from ..shapes import dims_match
from .infer import check_float


def _accuracy_infer(ctx):
    indices, label = ctx.shape("Indices"), ctx.shape("Label")
    if indices is not None and len(indices) != 2:
        ctx.fail(f"accuracy reads top-k Indices of shape [batch, k], got {indices}")
    if indices is not None and label is not None and (not label or not dims_match(label[0], indices[0])):
        ctx.fail(f"accuracy needs one Label per row of Indices, got Label {label} and Indices {indices}")
    # the kernel counts in int32; Paddle's Python declares Correct and Total int32 or float32 by API version
    return {"Accuracy": ([], VarType.FP32), "Correct": ([], None), "Total": ([], None)}


defop("accuracy", ["Out", "Indices", "Label"], ["Accuracy", "Correct", "Total"], infer=_accuracy_infer,
      grad=NO_GRAD)


def auc_count_sizes(thresholds: int, steps: int) -> tuple[int, ...]:
    """The sizes auc's StatPos and StatNeg may have. Without slide_steps Paddle counts into the first buckets and
    writes [1, buckets] back: paddle.static.auc's startup gives its batch AUC (slide_steps + 1) * buckets + 1 counts
    whatever slide_steps is."""
    buckets = thresholds + 1
    return (buckets, buckets + 1) if steps == 0 else ((steps + 1) * buckets + 1,)


def _auc_infer(ctx):
    """AUC of the ROC curve from histograms of the positive class's probability (num_thresholds + 1 buckets).
    slide_steps = 0 accumulates over every batch in StatPos/StatNeg [1, buckets]; slide_steps = s keeps the last s
    batches' histograms, their sum and a step counter in [(s + 1) * buckets + 1]. curve is not read: Paddle's
    kernel computes the ROC curve's AUC for any."""
    predict, label = ctx.shape("Predict"), ctx.shape("Label")
    check_float(ctx, "Predict")
    thresholds, steps = ctx.attr("num_thresholds"), ctx.attr("slide_steps")
    if predict is not None and (len(predict) != 2 or predict[1] not in (-1, 1, 2)):
        ctx.fail(f"auc needs Predict [batch, 1 or 2] (the last column the positive class's probability), "
                 f"got {predict}")
    if predict is not None and label is not None and (not label or not dims_match(label[0], predict[0])):
        ctx.fail(f"auc needs one Label per row of Predict {predict}, got {label}")
    if thresholds < 1 or steps < 0:
        ctx.fail(f"auc needs num_thresholds >= 1 and slide_steps >= 0, got {thresholds} and {steps}")
    buckets, sizes = thresholds + 1, auc_count_sizes(thresholds, steps)
    for slot in ("StatPos", "StatNeg"):
        stat = ctx.shape(slot)
        if stat is not None and -1 not in stat and math.prod(stat) not in sizes:
            ctx.fail(f"auc with num_thresholds={thresholds}, slide_steps={steps} needs {slot} of "
                     f"{' or '.join(map(str, sizes))} counts, got {stat}")
    # AUC is a float64 whatever the program declares: Paddle's programs declare it int64
    counts = {slot: ctx.shape(slot) if steps else [1, buckets] for slot in ("StatPos", "StatNeg")}
    return {"AUC": ([], None), "StatPosOut": (counts["StatPos"], VarType.INT64),
            "StatNegOut": (counts["StatNeg"], VarType.INT64)}


# StatPosOut/StatNegOut are StatPos/StatNeg themselves in Paddle's programs: the counts persist across runs
defop("auc", ["Predict", "Label", "StatPos", "StatNeg", "InsTagWeight?"], ["AUC", "StatPosOut", "StatNegOut"],
      attrs={"curve": "ROC", "num_thresholds": 8191, "slide_steps": 1}, infer=_auc_infer,
      grad=NO_GRAD, kernel_dtype_outputs=["AUC"])
