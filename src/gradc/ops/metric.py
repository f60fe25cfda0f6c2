"""Metrics a training program computes beside its loss: accuracy (Paddle's paddle.static.accuracy writes
top_k_v2, then this). No gradient."""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop
from ..shapes import dims_match


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
