"""Losses whose labels are integer class indices or soft distributions."""

from __future__ import annotations

from ..registry import defop, grad_op
from .infer import normalize_axis


def _class_axis_as_one(shape: list[int], axis: int = -1) -> list[int]:
    """Loss shapes keep the class axis with size 1."""
    shape = list(shape)
    shape[normalize_axis(axis, len(shape))] = 1
    return shape


defop("softmax_with_cross_entropy", ["Logits", "Label"], ["Softmax", "Loss"],
      attrs={"soft_label": False, "ignore_index": -100, "numeric_stable_mode": True,
             "use_softmax": True, "axis": -1},
      no_grad_inputs=["Label"], no_grad_outputs=["Softmax"],
      infer=lambda ctx: {"Softmax": (ctx.shape("Logits"), ctx.dtype("Logits")),
                         "Loss": (_class_axis_as_one(ctx.shape("Logits"), ctx.attr("axis")), ctx.dtype("Logits"))},
      grad=grad_op("Label", "Softmax"))

# X holds probabilities; MatchX = X at the label, which is all the grad needs.
defop("cross_entropy2", ["X", "Label"], ["Y", "XShape", "MatchX"], attrs={"ignore_index": -100},
      no_grad_inputs=["Label"], no_grad_outputs=["XShape", "MatchX"],
      infer=lambda ctx: {"Y": (_class_axis_as_one(ctx.shape("X")), ctx.dtype("X")),
                         "MatchX": (_class_axis_as_one(ctx.shape("X")), ctx.dtype("X")),
                         "XShape": ([0] + ctx.shape("X"), ctx.dtype("X"))},
      grad=grad_op("Label", "MatchX", "XShape", grad_type="cross_entropy_grad2"))
