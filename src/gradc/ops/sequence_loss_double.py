"""Second derivatives of the sequence losses: the makers of warpctc_grad and warprnnt_grad, composite
(gradc.ops.composite) so third derivatives follow. The grad ops only scale the gradient their forward computed
(WarpCTCGrad, warprnntgrad); as rnn_grad's maker (rnn_double), the loss is written again with differentiable ops
(gradc.ops.sequence_loss_unrolled), its backward seeded with the loss grad recomputes the grad op's output, and
both are differentiated again. Paddle's grad ops do not receive the labels: the makers read them (and their
lengths) from the forward op that wrote the stored gradient, in the same block or an enclosing one. Unrolling needs
the time steps, label length and classes: where one is known at run time only, the makers emit warpctc_grad_grad /
warprnnt_grad_grad (gradc's own ops) instead, a complex step through the kernels
(gradc.executor.kernels.sequence_loss_double), whose own makers refuse a third derivative.
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import OpDesc
from ..makers import GradContext
from ..registry import defgrad, grads_like_inputs
from . import sequence_loss  # noqa: F401  (registers warpctc_grad and warprnnt_grad)
from .composite import differentiate, expansion, first
from .sequence_loss_unrolled import Lattice, ctc_loss, rnnt_emissions, rnnt_loss


def forward_op(g: GradContext, forward: str, stored: str) -> OpDesc:
    """The ``forward`` op that wrote the grad op's input slot ``stored`` (its labels are the forward's only)."""
    var = first(g.I(stored))
    block = g.block
    while block is not None:
        for op in block.ops:
            if op.type == forward and var in op.output(stored):
                return op
        block = block.parent
    raise GradError(f"{g.fwd.type}: its second derivative needs the labels of the {forward} op that wrote "
                    f"{stored} '{var}', and no op in its block or an enclosing one writes it")


def known_dims(g: GradContext, var: str, dims: dict[int, str]) -> list[int]:
    """The shape of ``var``, whose dims ``dims`` ({axis: what it is}) the unrolling needs known."""
    shape = g.shape(var)
    for axis, meaning in dims.items():
        if shape is None or len(shape) <= axis or shape[axis] < 1:
            raise GradError(f"{g.fwd.type}: the {meaning} (dim {axis}) of '{var}' must be known to unroll the "
                            f"loss's recursion, got shape {shape}")
    return list(shape)


def ctc_recomputed(f, g) -> tuple[str, str]:
    """The unrolled CTC loss and its backward seeded with Loss@GRAD (divided by each sequence's length with
    norm_by_times): (the loss, the var recomputing Logits@GRAD)."""
    ctc = forward_op(g, "warpctc", "WarpCTCGrad")
    logits, lengths, dloss = first(g.I("Logits")), first(g.I("LogitsLength")), first(g.I("Loss@GRAD"))
    label, label_length = first(ctc.input("Label")), first(ctc.input("LabelLength"))
    steps, batch, classes = known_dims(g, logits, {0: "time steps", 2: "classes"})
    width = known_dims(g, label, {1: "label length"})[1]
    lat = Lattice(f, logits, batch)
    loss = ctc_loss(lat, logits, label, lengths, label_length, g.attr("blank"), (steps, batch, classes, width))
    seed = dloss
    if g.attr("norm_by_times"):
        times = lat.op("cast", {"X": lengths}, [batch], {"in_dtype": int(g.block.var(lengths).dtype),
                                                         "out_dtype": lat.dtype})
        seed = lat.binary("elementwise_div", dloss, lat.reshape(times, [-1, 1], [batch, 1]), [batch, 1])
    grad = g.tmp(logits)
    f.ops.extend(differentiate(g, list(f.ops), {loss: seed}, {logits: grad}))
    return loss, grad


def rnnt_recomputed(f, g) -> tuple[str, str]:
    """The unrolled RNN-T loss and its backward seeded with loss@GRAD, the label emissions' part scaled by
    1 + fastemit_lambda as the kernel's: (the loss, the var recomputing input@GRAD)."""
    rnnt = forward_op(g, "warprnnt", "warprnntgrad")
    x, lengths, dloss = first(g.I("input")), first(g.I("input_lengths")), first(g.I("loss@GRAD"))
    label, label_length = first(rnnt.input("label")), first(rnnt.input("label_lengths"))
    batch, steps, states, classes = known_dims(g, x, {1: "time steps", 2: "label positions", 3: "classes"})
    sizes = (batch, steps, states, classes)
    lat = Lattice(f, x, batch)
    blanks, emit = rnnt_emissions(lat, x, label, label_length, g.attr("blank"), sizes)
    picking = list(f.ops)
    loss = rnnt_loss(lat, blanks, emit, lengths, label_length, sizes)
    blank_grad, emit_grad, grad = g.tmp(blanks), g.tmp(emit), g.tmp(x)
    f.ops.extend(differentiate(g, f.ops[len(picking):], {loss: dloss}, {blanks: blank_grad, emit: emit_grad}))
    fastemit = g.attr("fastemit_lambda")
    if fastemit:
        emit_grad = lat.scale(emit_grad, [batch, steps, states - 1], 1.0 + fastemit)
    f.ops.extend(differentiate(g, picking, {blanks: blank_grad, emit: emit_grad}, {x: grad}))
    return loss, grad


def _recomputing(recomputed, slot: str):
    """The maker (``expansion``) of a grad op whose output ``slot`` ``recomputed`` redoes."""
    def expand(f, g):
        return {slot: recomputed(f, g)[1]}

    maker = expansion(expand)
    maker.__doc__ = f"The loss unrolled with differentiable ops and its backward (recomputing {slot}), both " \
                    "differentiated again; the labels are read from the forward op."
    return maker


def _known(g: GradContext, var: str, axes: tuple[int, ...]) -> bool:
    shape = g.shape(var)
    return shape is not None and all(len(shape) > axis and shape[axis] > 0 for axis in axes)


def _ctc_grad_again(g) -> list[OpDesc]:
    """Unrolled where the time steps, classes and label length are known; else one warpctc_grad_grad, a complex step
    through warpctc's kernel (gradc.executor.kernels.sequence_loss_double)."""
    ctc = forward_op(g, "warpctc", "WarpCTCGrad")
    if _known(g, first(g.I("Logits")), (0, 2)) and _known(g, first(ctc.input("Label")), (1,)):
        return _unrolled_ctc_grad(g)
    dd = g.OG("Logits@GRAD")
    values = {"Logits": g.I("Logits"), "LogitsLength": g.I("LogitsLength"), "Label": ctc.input("Label"),
              "LabelLength": ctc.input("LabelLength"), "Loss@GRAD": g.I("Loss@GRAD")}
    return [g.op("warpctc_grad_grad", {**values, "Logits@GRAD@GRAD": dd},
                 {"Logits@GRAD": g.IG("Logits"), "Loss@GRAD@GRAD": g.IG("Loss@GRAD")}, forward_attrs=True)]


def _rnnt_grad_again(g) -> list[OpDesc]:
    """Unrolled where the time steps, label positions (2 or more) and classes are known; else one warprnnt_grad_grad,
    a complex step through warprnnt's kernel."""
    rnnt = forward_op(g, "warprnnt", "warprnntgrad")
    x = first(g.I("input"))
    if _known(g, x, (1, 2, 3)) and g.shape(x)[2] > 1:   # a label position at least
        return _unrolled_rnnt_grad(g)
    values = {"input": g.I("input"), "input_lengths": g.I("input_lengths"), "label": rnnt.input("label"),
              "label_lengths": rnnt.input("label_lengths"), "loss@GRAD": g.I("loss@GRAD")}
    return [g.op("warprnnt_grad_grad", {**values, "input@GRAD@GRAD": g.OG("input@GRAD")},
                 {"input@GRAD": g.IG("input"), "loss@GRAD@GRAD": g.IG("loss@GRAD")}, forward_attrs=True)]


def _third(g):
    raise GradError(f"{g.fwd.type}: gradc does not differentiate the sequence loss three times over sizes known at "
                    f"run time only: its second derivative is a complex step through the kernel, and a third would "
                    f"need dual numbers there")


_unrolled_ctc_grad = _recomputing(ctc_recomputed, "Logits@GRAD")
_unrolled_rnnt_grad = _recomputing(rnnt_recomputed, "input@GRAD")
defgrad("warpctc_grad", grad=_ctc_grad_again, no_grad_inputs=["WarpCTCGrad", "LogitsLength"])
defgrad("warpctc_grad_grad", inputs=["Logits", "LogitsLength", "Label", "LabelLength", "Loss@GRAD",
                                     "Logits@GRAD@GRAD"], outputs=["Logits@GRAD?", "Loss@GRAD@GRAD?"],
        attrs={"blank": 0, "norm_by_times": False}, infer=grads_like_inputs, grad=_third, of="warpctc_grad")
defgrad("warprnnt_grad", grad=_rnnt_grad_again, no_grad_inputs=["warprnntgrad", "input_lengths"])
defgrad("warprnnt_grad_grad", inputs=["input", "input_lengths", "label", "label_lengths", "loss@GRAD",
                                      "input@GRAD@GRAD"], outputs=["input@GRAD?", "loss@GRAD@GRAD?"],
        attrs={"blank": 0, "fastemit_lambda": 0.0}, infer=grads_like_inputs, grad=_third, of="warprnnt_grad")
