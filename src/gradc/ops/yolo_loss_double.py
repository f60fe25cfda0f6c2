"""Second derivative of yolov3_loss, composite (gradc.ops.composite) so third derivatives follow. With the masks
fixed, yolov3_loss_grad is X@GRAD = dLoss (A (sigmoid(X) - T) + S): A and T (the weights and targets of the
cross entropies of the box centres, the objectness and the classes) depend on the gt boxes and masks only, and
S (the signs of the L1 terms of the box sizes, on channels 2 and 3 of each anchor) is flat in X. So

    d/d(dLoss) = sum over C, H, W of ddX * yolov3_loss_grad(X, dLoss = 1)
    d/dX       = dLoss * ddX * A * sigmoid'(X)

and A is the grad op's own difference between X = 40 and X = -40 (sigmoid 1 and 0 exactly) on the other
channels.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from . import yolo_loss
from .composite import Formula, first
from .creation import scalars

SATURATED = 40.0   # sigmoid(+-40) is 1 and 0 in float32 and float64 alike
SIZE_CHANNELS = (2, 3)


def _grad_at(f: Formula, x: str, dloss: str) -> str:
    """yolov3_loss_grad of the op differentiated, at ``x`` and ``dloss``."""
    g = f.g
    inputs = {slot: g.I(slot) for slot in (*yolo_loss.GT_SLOTS, *yolo_loss.MASKS)}
    return f.op("yolov3_loss_grad", {**inputs, "X": x, "Loss@GRAD": dloss}, x, slot="X@GRAD", same=True)


def _cross_entropy_channels(f: Formula, x: str) -> str:
    """[C]: 1 on the channels of cross entropies, 0 on the box sizes' (L1)."""
    g = f.g
    per_anchor = [0.0 if c in SIZE_CHANNELS else 1.0 for c in range(yolo_loss.entries(g.attr("class_num")))]
    values = per_anchor * len(g.attr("anchor_mask"))
    dtype = g.block.find_var(x).dtype
    return f.op("assign_value", {}, x, {"shape": [len(values)], "dtype": int(dtype), "values": scalars(values)},
                dims=lambda s: [len(values)], dtype=dtype)


def _yolov3_loss_double_grad(g):
    f = Formula(g)
    x, dloss, ddx = first(g.I("X")), first(g.I("Loss@GRAD")), first(g.OG("X@GRAD"))
    if ddx is None:
        return []
    ones = f.fill_like(dloss, 1.0)
    if first(g.IG("Loss@GRAD")) not in (None, EMPTY_VAR):
        f.into(first(g.IG("Loss@GRAD")), "reduce_sum", {"X": f.mul(ddx, _grad_at(f, x, ones), x)},
               {"dim": [1, 2, 3], "keep_dim": False, "reduce_all": False})
    if first(g.IG("X")) not in (None, EMPTY_VAR):
        span = f.sub(_grad_at(f, f.fill_like(x, SATURATED), ones), _grad_at(f, f.fill_like(x, -SATURATED), ones), x)
        weight = f.mul(f.mul(f.mul(span, _cross_entropy_channels(f, x), x, axis=1), ddx, x), dloss, x, axis=0)
        f.into(first(g.IG("X")), "sigmoid_grad", {"Out": f.unary("sigmoid", x), "Out@GRAD": weight}, slot="X@GRAD")
    return f.ops


defgrad("yolov3_loss_grad", grad=_yolov3_loss_double_grad, no_grad_inputs=[*yolo_loss.GT_SLOTS, *yolo_loss.MASKS])
