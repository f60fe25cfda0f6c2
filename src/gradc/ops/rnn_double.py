"""Second derivatives of the fused ``rnn`` op: rnn_grad's maker, composite (gradc.ops.composite) so third
derivatives follow. As cumprod's (cumprod_double), the forward is written again with differentiable ops (unrolled
over layers, directions and time steps: gradc.ops.rnn_unrolled), its backward seeded with rnn_grad's Out@GRAD and
State@GRAD is emitted by ``differentiate`` (so it recomputes rnn_grad's outputs), and both are differentiated
again. The recomputation reads Input, PreState, WeightList and the output grads, and as constants SequenceLength
and the dropout mask DropoutState; not Out or Reserve. Over a time dim of unknown size (no unrolling: a maker cannot
emit a while loop it could differentiate) rnn_grad's maker emits rnn_grad_grad instead: rnn_grad along directions
of its inputs, its kernel the forward and backward on duals nested once per direction, whose maker emits it again
with one more (gradc.ops.directional_double), so every order follows.
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR
from ..makers import GradContext
from ..registry import defgrad, grads_like_inputs
from . import rnn  # noqa: F401  (registers rnn_grad)
from .composite import Formula, differentiate, first
from .directional_double import one_more_direction
from .rnn import RNN_ATTRS, rnn_shape_of
from .rnn_unrolled import Unrolled, dropped

# rnn_grad's outputs and the rnn inputs whose grads they are
GRAD_SLOTS = (("Input@GRAD", "Input"), ("PreState@GRAD", "PreState"), ("WeightList@GRAD", "WeightList"))


def _steps_and_batch(g: GradContext, x: str) -> tuple[int, int]:
    """T (which the unrolling needs) and B (-1 when known at run time only) of Input."""
    dims = g.shape(x)
    if dims is None or len(dims) != 3 or dims[0] < 0:
        raise GradError(f"rnn_grad: the time steps (dim 0) of Input '{x}' must be known to unroll the recurrence, "
                        f"got shape {dims}")
    return dims[0], dims[1]


def _steps_known(g: GradContext) -> bool:
    dims = g.shape(first(g.I("Input")))
    return dims is not None and len(dims) == 3 and dims[0] >= 0


# theta, the output grads and the constants of rnn_grad_grad (gradc.ops.directional_double)
THETAS, DOUTS, CONSTANTS = ("Input", "PreState", "WeightList"), ("Out@GRAD", "State@GRAD"), ("SequenceLength",
                                                                                              "DropoutState")


def _directional(g: GradContext):
    """Over a time dim of unknown size: rnn_grad_grad along one more direction, its kernel the forward and backward
    on nested duals."""
    return one_more_direction(g, "rnn_grad_grad", THETAS, DOUTS, CONSTANTS)


def _dropout(f: Formula, g: GradContext):
    """The inter-layer dropout the forward applied (None: none), from its mask DropoutState."""
    if g.attr("is_test") or g.attr("dropout_prob") <= 0 or g.attr("num_layers") < 2:
        return None
    mask = first(g.I("DropoutState"))
    if mask is None:
        raise GradError("rnn_grad: dropout between layers needs its mask, but the slot DropoutState is empty")
    return dropped(f, mask, g.attr("dropout_prob"))


def recomputed_grads(f: Formula, g: GradContext) -> dict[str, str]:
    """Emits the unrolled forward and its backward; returns {rnn_grad output var: the var recomputing it}."""
    x = first(g.I("Input"))
    steps, batch = _steps_and_batch(g, x)
    out, states = Unrolled(f, rnn_shape_of(g.attr), steps, batch).forward(
        x, g.I("PreState"), g.I("WeightList"), first(g.I("SequenceLength")), _dropout(f, g))
    seeds = {out: first(g.I("Out@GRAD"))} if g.I("Out@GRAD") else {}
    seeds.update((state, grad) for state, grad in zip(states, g.I("State@GRAD")) if grad != EMPTY_VAR)
    recomputed, targets = {}, {}
    for grad_slot, slot in GRAD_SLOTS:
        for var, name in zip(g.I(slot), g.O(grad_slot)):
            if name != EMPTY_VAR:
                targets[var] = recomputed[name] = targets.get(var) or g.tmp(var)
    if not seeds:
        return {}
    f.ops.extend(differentiate(g, list(f.ops), seeds, targets))
    return recomputed


def _rnn_grad(g: GradContext):
    """The rnn forward unrolled into differentiable ops and its backward (recomputing rnn_grad's outputs), both
    differentiated again, seeded with the grads of rnn_grad's outputs; over a time dim of unknown size
    rnn_grad_grad."""
    if not _steps_known(g):
        return _directional(g)
    f = Formula(g)
    recomputed = recomputed_grads(f, g)
    if not recomputed:
        return []
    seeds = {recomputed[name]: og for grad_slot, _ in GRAD_SLOTS for name, og in zip(g.O(grad_slot), g.OG(grad_slot))
             if name in recomputed}
    targets = {var: ig for slot in g.opdef.inputs for var, ig in zip(g.I(slot), g.IG(slot)) if ig != EMPTY_VAR}
    return f.ops + differentiate(g, f.ops, seeds, targets)


defgrad("rnn_grad", grad=_rnn_grad, no_grad_inputs=["Out", "Reserve", "DropoutState", "SequenceLength"])

defgrad("rnn_grad_grad", inputs=["Input", "PreState[]", "WeightList[]", "SequenceLength?", "DropoutState?",
                                 "Out@GRAD?", "State@GRAD[]?", *(f"{slot}@GRAD@GRAD[]?" for slot in THETAS)],
        outputs=["Input@GRAD?", "PreState@GRAD[]?", "WeightList@GRAD[]?", "Out@GRAD@GRAD?", "State@GRAD@GRAD[]?"],
        attrs=RNN_ATTRS, infer=grads_like_inputs, grad=_directional, no_grad_inputs=list(CONSTANTS), of="rnn_grad")
