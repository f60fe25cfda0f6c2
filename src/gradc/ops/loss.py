"""Losses: cross entropies over classes (integer or soft labels), elementwise losses, KL divergence."""

from __future__ import annotations

from ..registry import defop, grad_op
from ..shapes import dims_match


def _class_axis_as_one(ctx, shape: list[int], axis: int = -1) -> list[int]:
    """Loss shapes keep the class axis with size 1."""
    if not shape:
        ctx.fail(f"{ctx.op.type} needs an input with a class axis, got a 0-d tensor")
    shape = list(shape)
    shape[ctx.axis(axis, len(shape))] = 1
    return shape


defop("softmax_with_cross_entropy", ["Logits", "Label"], ["Softmax", "Loss"],
      attrs={"soft_label": False, "ignore_index": -100, "numeric_stable_mode": True,
             "use_softmax": True, "axis": -1},
      no_grad_inputs=["Label"], no_grad_outputs=["Softmax"],
      infer=lambda ctx: {"Softmax": (ctx.shape("Logits"), ctx.dtype("Logits")),
                         "Loss": (_class_axis_as_one(ctx, ctx.shape("Logits"), ctx.attr("axis")), ctx.dtype("Logits"))},
      grad=grad_op("Label", "Softmax"))

# X holds probabilities; MatchX = X at the label, which is all the grad needs.
defop("cross_entropy2", ["X", "Label"], ["Y", "XShape", "MatchX"], attrs={"ignore_index": -100},
      no_grad_inputs=["Label"], no_grad_outputs=["XShape", "MatchX"],
      infer=lambda ctx: {"Y": (_class_axis_as_one(ctx, ctx.shape("X")), ctx.dtype("X")),
                         "MatchX": (_class_axis_as_one(ctx, ctx.shape("X")), ctx.dtype("X")),
                         "XShape": ([0] + ctx.shape("X"), ctx.dtype("X"))},
      grad=grad_op("Label", "MatchX", "XShape", grad_type="cross_entropy_grad2"))



def _same_shape_infer(*slots: str, outs=("Out",)):
    """Elementwise losses: every slot has X's shape, and so does each output."""
    def infer(ctx):
        x = ctx.shape("X")
        for slot in slots:
            other = ctx.shape(slot)
            if ctx.has(slot) and (len(other) != len(x) or not all(map(dims_match, x, other))):
                ctx.fail(f"{slot} {other} must have the shape of X {x}")
        return {out: (x, ctx.dtype("X")) for out in outs}
    return infer


defop("sigmoid_cross_entropy_with_logits", ["X", "Label", "pos_weight?"],
      attrs={"normalize": False, "ignore_index": -100}, no_grad_inputs=["Label", "pos_weight"],
      infer=_same_shape_infer("Label", "pos_weight"), grad=grad_op("X", "Label", "pos_weight"))
defop("bce_loss", ["X", "Label"], no_grad_inputs=["Label"], infer=_same_shape_infer("Label"),
      grad=grad_op("X", "Label"))
# Residual = Y - X is all the grad needs.
defop("huber_loss", ["X", "Y"], ["Out", "Residual"], attrs={"delta": 1.0}, no_grad_outputs=["Residual"],
      infer=_same_shape_infer("Y", outs=("Out", "Residual")), grad=grad_op("Residual"))

KLDIV_REDUCTIONS = ("none", "batchmean", "mean", "sum")


def _kldiv_infer(ctx):
    if ctx.attr("reduction") not in KLDIV_REDUCTIONS:
        ctx.fail(f"kldiv_loss reduction {ctx.attr('reduction')!r} is not one of {KLDIV_REDUCTIONS}")
    shape, dtype = _same_shape_infer("Target", outs=("Loss",))(ctx)["Loss"]
    return {"Loss": (shape if ctx.attr("reduction") == "none" else [], dtype)}


defop("kldiv_loss", ["X", "Target"], ["Loss"], attrs={"reduction": "mean", "log_target": False},
      no_grad_inputs=["Target"], infer=_kldiv_infer, grad=grad_op("X", "Target"))
