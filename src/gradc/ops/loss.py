"""Losses: cross entropies over classes (integer or soft labels), negative log-likelihood, elementwise
losses, KL divergence. Sequence losses (CTC, RNN-T) are in gradc.ops.sequence_loss, the hierarchical
sigmoid in gradc.ops.hsigmoid."""

from __future__ import annotations

from ..ir import EMPTY_VAR, AttrType
from ..registry import GradOp, defop, grad_op, grads_like_inputs, typed
from ..shapes import dims_match
from .composite import Formula

REDUCTIONS = ("none", "mean", "sum")


def _same_dims(a: list[int], b: list[int]) -> bool:
    return len(a) == len(b) and all(map(dims_match, a, b))


def check_reduction(ctx, allowed=REDUCTIONS) -> str:
    reduction = ctx.attr("reduction")
    if reduction not in allowed:
        ctx.fail(f"reduction {reduction!r} is not one of {allowed}")
    return reduction


def _class_axis_as_one(ctx, shape: list[int], axis: int = -1) -> list[int]:
    """Loss shapes keep the class axis with size 1."""
    if not shape:
        ctx.fail(f"{ctx.op.type} needs an input with a class axis, got a 0-d tensor")
    shape = list(shape)
    shape[ctx.axis(axis, len(shape))] = 1
    return shape


def _softmax_ce_infer(ctx):
    """Label: Logits' shape with the class axis 1 (integer labels) or of the class count (soft labels)."""
    logits, label = ctx.shape("Logits"), ctx.shape("Label")
    loss = _class_axis_as_one(ctx, logits, ctx.attr("axis"))
    axis = ctx.axis(ctx.attr("axis"), len(logits))
    if axis != len(logits) - 1 and not ctx.attr("numeric_stable_mode"):
        ctx.fail(f"axis {ctx.attr('axis')} must be the last one when numeric_stable_mode is off")
    expected = logits if ctx.attr("soft_label") else loss
    if not _same_dims(label, expected):
        kind = "soft labels" if ctx.attr("soft_label") else "integer labels"
        ctx.fail(f"Label {label} must have shape {expected} ({kind}, class axis {axis})")
    return {"Softmax": (logits, ctx.dtype("Logits")), "Loss": (loss, ctx.dtype("Logits"))}


class _SoftmaxCrossEntropyGrad(GradOp):
    """Paddle's grad op, which reads Loss@GRAD only; when the Softmax output has a gradient too (a second
    derivative reaches it through that grad op), it flows back to Logits through the softmax."""

    def __call__(self, g):
        ops = super().__call__(g)
        softmax, wanted = g.O("Softmax")[0], g.IG("Logits")
        if g.wants(softmax) and wanted != [EMPTY_VAR]:
            if g.attr("use_softmax"):
                ops.append(g.op("softmax_grad", {"Out": [softmax], "Out@GRAD": [g.grad_of(softmax)]},
                                {"X@GRAD": wanted}, {"axis": g.attr("axis")}))
            else:   # Softmax is Logits
                ops.append(g.op("scale", {"X": [g.grad_of(softmax)]}, {"Out": wanted}, {"scale": 1.0}))
        return ops


defop("softmax_with_cross_entropy", ["Logits", "Label"], ["Softmax", "Loss"],
      attrs={"soft_label": False, "ignore_index": -100, "numeric_stable_mode": True,
             "use_softmax": True, "axis": -1},
      no_grad_inputs=["Label"], no_grad_outputs=["Softmax"], infer=_softmax_ce_infer,
      grad=_SoftmaxCrossEntropyGrad(("Label", "Softmax")))


def _cross_entropy_y(ctx) -> list[int]:
    """Y of cross_entropy(2): integer labels are X's shape with the last axis 1, or without it, and Y has
    their shape (last axis 1); soft labels have X's shape, Y has it with the last axis 1."""
    x, label = ctx.shape("X"), ctx.shape("Label")
    y = _class_axis_as_one(ctx, x)
    if ctx.op.type == "cross_entropy" and ctx.attr("soft_label"):
        if not _same_dims(label, x):
            ctx.fail(f"Label {label} must have the shape of X {x} (soft labels)")
    elif not (_same_dims(label, y) or _same_dims(label, x[:-1])):
        ctx.fail(f"Label {label} must have shape {y} or {x[:-1]}")
    return y if len(label) == len(x) else label


def _cross_entropy2_infer(ctx):
    x, dtype = ctx.shape("X"), ctx.dtype("X")
    return {"Y": (_cross_entropy_y(ctx), dtype), "MatchX": (_class_axis_as_one(ctx, x), dtype),
            "XShape": (x + [0], dtype)}


class _CrossEntropy2Grad(GradOp):
    """Paddle's grad op, reading MatchX; when MatchX has a gradient too (a second derivative reaches it through
    that grad op), it goes to X at the label: the grad op with MatchX = -1 puts Y@GRAD there."""

    def __call__(self, g):
        ops = super().__call__(g)
        match, wanted = g.O("MatchX")[0], g.IG("X")
        if g.wants(match) and wanted != [EMPTY_VAR]:
            minus_ones = g.tmp(match)
            ops.append(g.op("fill_any_like", {"X": [match]}, {"Out": [minus_ones]}, {"value": -1.0, "dtype": -1}))
            ops.append(g.op("cross_entropy_grad2", {"Label": g.I("Label"), "MatchX": [minus_ones],
                                                    "XShape": g.O("XShape"), "Y@GRAD": [g.grad_of(match)]},
                            {"X@GRAD": wanted}, forward_attrs=True))
        return ops


# X holds probabilities; MatchX = X at the label (0 where ignored), which is all the grad needs.
defop("cross_entropy2", ["X", "Label"], ["Y", "XShape", "MatchX"], attrs={"ignore_index": -100},
      no_grad_inputs=["Label"], no_grad_outputs=["XShape", "MatchX"], infer=_cross_entropy2_infer,
      grad=_CrossEntropy2Grad(("Label", "MatchX", "XShape"), "cross_entropy_grad2"))


# X holds probabilities: Y = -log(X at the label), or -sum(Label * log X) for soft labels.
defop("cross_entropy", ["X", "Label"], ["Y"], attrs={"soft_label": False, "ignore_index": -100},
      no_grad_inputs=["Label"], infer=lambda ctx: {"Y": (_cross_entropy_y(ctx), ctx.dtype("X"))},
      grad=grad_op("X", "Label"))

IDENTITY_LOSS_REDUCTIONS = {0: "sum", 1: "mean", 2: "none"}


def _identity_loss_infer(ctx):
    reduction = IDENTITY_LOSS_REDUCTIONS.get(ctx.attr("reduction"))
    if reduction is None:
        ctx.fail(f"reduction {ctx.attr('reduction')} is not one of {IDENTITY_LOSS_REDUCTIONS}")
    return {"Out": (ctx.shape("X") if reduction == "none" else [], ctx.dtype("X"))}


# Marks a loss computed by other ops; reduction 0 sums it, 1 averages it, 2 keeps it.
defop("identity_loss", ["X"], attrs={"reduction": 1}, infer=_identity_loss_infer, grad=grad_op("X"))


def _nll_infer(ctx):
    """X is [N, C] (Label [N]) or [N, C, H, W] (Label [N, H, W]); Weight [C]."""
    x, label, reduction = ctx.shape("X"), ctx.shape("Label"), check_reduction(ctx)
    if len(x) not in (2, 4):
        ctx.fail(f"X must be [N, C] or [N, C, H, W], got shape {x}")
    if not _same_dims(label, x[:1] + x[2:]):
        ctx.fail(f"Label {label} must have shape {x[:1] + x[2:]}")
    if ctx.has("Weight") and not _same_dims(ctx.shape("Weight"), x[1:2]):
        ctx.fail(f"Weight {ctx.shape('Weight')} must have shape [{x[1]}] (one weight per class)")
    out = x[:1] + x[2:] if reduction == "none" else []
    return {"Out": (out, ctx.dtype("X")), "Total_weight": ([], ctx.dtype("X"))}


# Total_weight = sum of the weights of the labels counted, what "mean" divides by.
defop("nll_loss", ["X", "Label", "Weight?"], ["Out", "Total_weight"],
      attrs={"ignore_index": typed(-100, AttrType.LONG), "reduction": "mean"},
      no_grad_inputs=["Label", "Weight"], no_grad_outputs=["Total_weight"], infer=_nll_infer,
      grad=grad_op("X", "Label", "Weight", "Total_weight"))


def _same_shape_infer(*slots: str, outs=("Out",), first="X"):
    """Elementwise losses: every slot has ``first``'s shape, and so does each output."""
    def infer(ctx):
        x = ctx.shape(first)
        for slot in slots:
            if ctx.has(slot) and not _same_dims(x, ctx.shape(slot)):
                ctx.fail(f"{slot} {ctx.shape(slot)} must have the shape of {first} {x}")
        return {out: (x, ctx.dtype(first)) for out in outs}
    return infer


defop("sigmoid_cross_entropy_with_logits", ["X", "Label", "pos_weight?"],
      attrs={"normalize": False, "ignore_index": -100}, no_grad_inputs=["Label", "pos_weight"],
      infer=_same_shape_infer("Label", "pos_weight"), grad=grad_op("X", "Label", "pos_weight"))
defop("bce_loss", ["X", "Label"], no_grad_inputs=["Label"], infer=_same_shape_infer("Label"),
      grad=grad_op("X", "Label"))


class _HuberGrad(GradOp):
    """Paddle's grad op, reading Residual = Y - X; when Residual has a gradient too (a second derivative reaches
    it through that grad op), it goes to Y as it is and to X negated."""

    def __call__(self, g):
        ops = super().__call__(g)
        residual = g.O("Residual")[0]
        if g.wants(residual):
            for slot, sign in (("X", -1.0), ("Y", 1.0)):
                if g.IG(slot) != [EMPTY_VAR]:
                    ops.append(g.op("scale", {"X": [g.grad_of(residual)]}, {"Out": g.IG(slot)}, {"scale": sign}))
        return ops


# Residual = Y - X is all the grad needs.
defop("huber_loss", ["X", "Y"], ["Out", "Residual"], attrs={"delta": 1.0}, no_grad_outputs=["Residual"],
      infer=_same_shape_infer("Y", outs=("Out", "Residual")), grad=_HuberGrad(("Residual",)))
# -labels * log(p + eps) - (1 - labels) * log(1 - p + eps); Paddle's op has no default for epsilon
defop("log_loss", ["Predicted", "Labels"], ["Loss"], attrs={"epsilon": 1e-4}, no_grad_inputs=["Labels"],
      infer=_same_shape_infer("Labels", outs=("Loss",), first="Predicted"), grad=grad_op("Predicted", "Labels"))

KLDIV_REDUCTIONS = ("none", "batchmean", "mean", "sum")


def _kldiv_infer(ctx):
    reduction = check_reduction(ctx, KLDIV_REDUCTIONS)
    shape, dtype = _same_shape_infer("Target", outs=("Loss",))(ctx)["Loss"]
    return {"Loss": (shape if reduction == "none" else [], dtype)}


def _kldiv_grad(g):
    """kldiv_loss_grad gives dX = -w dLoss / scale (w: Target, or exp(Target) with log_target), as Paddle's. Paddle
    gives Target no gradient (mutual learning trains both nets through it); gradc gives it dLoss / scale times
    log(t) + 1 - x where t > 0 (the loss is 0 elsewhere), or exp(t) (t - x + 1) with log_target; -dLoss / scale is
    the grad op's dX with Target 1 (0 with log_target)."""
    f = Formula(g)
    uses = {"X": g.I("X"), "Target": g.I("Target"), "Loss@GRAD": g.OG("Loss")}
    f.emit("kldiv_loss_grad", uses, {"X@GRAD": g.IG("X")}, same=True)
    if g.IG("Target")[0] == EMPTY_VAR:
        return f.ops
    x, target, log_target = g.I("X")[0], g.I("Target")[0], g.attr("log_target")
    unit = f.fill_like(target, 0.0 if log_target else 1.0)
    minus_spread = f.op("kldiv_loss_grad", {**uses, "Target": unit}, x, slot="X@GRAD", same=True)
    if log_target:
        slope = f.mul(f.unary("exp", target), f.scale(f.sub(target, x, x), -1.0, -1.0), x)
    else:
        positive = f.unary("sign", f.unary("relu", target))   # 1 where t > 0, else 0
        safe = f.add(f.mul(target, positive, x), f.scale(positive, -1.0, 1.0), x)   # t, or 1 where the loss is 0
        slope = f.mul(f.scale(f.sub(f.unary("log", safe), x, x), -1.0, -1.0), positive, x)
    f.into(g.IG("Target")[0], "elementwise_mul", {"X": slope, "Y": minus_spread}, {"axis": -1})
    return f.ops


defop("kldiv_loss", ["X", "Target"], ["Loss"], attrs={"reduction": "mean", "log_target": False},
      infer=_kldiv_infer, grad=_kldiv_grad)
defop("kldiv_loss_grad", ["X", "Target", "Loss@GRAD"], ["X@GRAD?"], attrs={"reduction": "mean", "log_target": False},
      infer=grads_like_inputs).grad_op_of = "kldiv_loss"
