"""Sequence losses over padded batches with explicit lengths: CTC (warpctc, nn.CTCLoss) and RNN-T (warprnnt,
nn.RNNTLoss). Like Paddle's kernels, the forward op also computes the gradient of each sequence's loss
(WarpCTCGrad, warprnntgrad); the grad op scales it by the loss grad."""

from __future__ import annotations

from ..registry import defop, grad_op
from ..shapes import dims_match


def _check_lengths(ctx, batch: int, *slots: str) -> None:
    for slot in slots:
        shape = ctx.shape(slot)
        if len(shape) != 1 or not dims_match(shape[0], batch):
            ctx.fail(f"{slot} {shape} must be [{batch}], one length per sequence")


def _check_blank(ctx, classes: int) -> None:
    if classes >= 0 and not 0 <= ctx.attr("blank") < classes:
        ctx.fail(f"blank={ctx.attr('blank')} must be a class in [0, {classes})")


def _warpctc_infer(ctx):
    """Logits [max time, batch, classes], Label [batch, max label length]."""
    logits, label = ctx.shape("Logits"), ctx.shape("Label")
    if not (ctx.has("LogitsLength") and ctx.has("LabelLength")):
        ctx.fail("gradc runs CTC on padded batches only: give LogitsLength and LabelLength "
                 "(Paddle's other form reads LoD sequences, which gradc does not keep)")
    if len(logits) != 3:
        ctx.fail(f"Logits {logits} must be [max time, batch, classes]")
    if len(label) != 2 or not dims_match(label[0], logits[1]):
        ctx.fail(f"Label {label} must be [{logits[1]}, max label length]")
    _check_lengths(ctx, logits[1], "LogitsLength", "LabelLength")
    _check_blank(ctx, logits[2])
    return {"Loss": ([logits[1], 1], ctx.dtype("Logits")), "WarpCTCGrad": (logits, ctx.dtype("Logits"))}


# norm_by_times divides each sequence's gradient (not its loss) by its length, as Paddle documents.
defop("warpctc", ["Logits", "Label", "LogitsLength?", "LabelLength?"], ["Loss", "WarpCTCGrad"],
      attrs={"blank": 0, "norm_by_times": False}, no_grad_inputs=["Label", "LogitsLength", "LabelLength"],
      no_grad_outputs=["WarpCTCGrad"], infer=_warpctc_infer, grad=grad_op("Logits", "LogitsLength", "WarpCTCGrad"))


def _warprnnt_infer(ctx):
    """input [batch, max time, max label length + 1, classes] of log-probabilities, label [batch, max label
    length]."""
    x, label = ctx.shape("input"), ctx.shape("label")
    if len(x) != 4:
        ctx.fail(f"input {x} must be [batch, max time, max label length + 1, classes]")
    if len(label) != 2 or not dims_match(label[0], x[0]) or (x[2] >= 0 and not dims_match(label[1], x[2] - 1)):
        ctx.fail(f"label {label} must be [{x[0]}, {x[2] - 1 if x[2] >= 0 else -1}]")
    _check_lengths(ctx, x[0], "input_lengths", "label_lengths")
    _check_blank(ctx, x[3])
    return {"loss": ([x[0]], ctx.dtype("input")), "warprnntgrad": (x, ctx.dtype("input"))}


# fastemit_lambda scales the gradient of label emissions by 1 + lambda (FastEmit); the loss is unchanged.
defop("warprnnt", ["input", "label", "input_lengths", "label_lengths"], ["loss", "warprnntgrad"],
      attrs={"blank": 0, "fastemit_lambda": 0.0}, no_grad_inputs=["label", "input_lengths", "label_lengths"],
      no_grad_outputs=["warprnntgrad"], infer=_warprnnt_infer,
      grad=grad_op("input", "input_lengths", "warprnntgrad"))
