"""Second derivatives of the losses of gradc.ops.loss (and label_smooth), composite (gradc.ops.composite) so
third derivatives follow. ``ddX`` is the grad of the grad op's output X@GRAD.

Each grad op is linear in the loss's grad dOut. The elementwise ones go through activation_double's
unary_double (d/d(dOut) is the grad op applied to ddX); for the reducing ones X@GRAD = dOut spread over X times
G(dOut = 1), so d/d(dOut) = ddX G(dOut = 1) summed back to dOut's shape. d/dX is written per op.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from . import creation, loss  # noqa: F401  (register the grad ops given makers here)
from .activation_double import unary_double
from .composite import Formula, first, linear


def _bce(f, g, x, p):
    """f' = (x - label) / (x (1 - x)): f'' p = (p - f' p (1 - 2 x)) / (x (1 - x))."""
    once = f.op(g.fwd.type, {"X": x, "Label": g.I("Label"), "Out@GRAD": p}, x, slot="X@GRAD", same=True)
    return f.div(f.sub(p, f.mul(once, f.scale(x, -2.0, 1.0), x), x), f.mul(x, f.scale(x, -1.0, 1.0), x), x)


def _sigmoid_ce(f, g, x, p):
    """f' = kept scale ((1 - label) + w (sigmoid(x) - 1)): f'' = -A sigmoid(x), A = kept scale w (sigmoid(x) - 1)
    the grad op for dOut = 1 less the same with w = 0 (w = pos_weight, or 1)."""

    def unit(weight):
        return f.op(g.fwd.type, {"X": x, "Label": g.I("Label"), "pos_weight": weight, "Out@GRAD": f.fill_like(x, 1.0)},
                    x, slot="X@GRAD", same=True)

    weighted = f.sub(unit(first(g.I("pos_weight"))), unit(f.fill_like(x, 0.0)), x)
    return f.scale(f.mul(f.mul(weighted, f.unary("sigmoid", x), x), p, x), -1.0)


def _log_loss(f, g, predicted, p):
    """f' = (1 - l) / (1 - x + eps) - l / (x + eps): f'' = (1 - l) / (1 - x + eps)^2 + l / (x + eps)^2."""
    labels, eps = first(g.I("Labels")), g.attr("epsilon")
    below = f.div(f.scale(labels, -1.0, 1.0), f.unary("square", f.scale(predicted, -1.0, 1.0 + eps)), predicted)
    above = f.div(labels, f.unary("square", f.scale(predicted, 1.0, eps)), predicted)
    return f.mul(f.add(below, above, predicted), p, predicted)


unary_double("bce_loss_grad", _bce, flat=("Label",))
unary_double("sigmoid_cross_entropy_with_logits_grad", _sigmoid_ce, flat=("Label", "pos_weight"))
unary_double("log_loss_grad", _log_loss, flat=("Labels",), x="Predicted", out="Loss")
unary_double("label_smooth_grad")                                  # (1 - epsilon) dOut
defgrad("identity_loss_grad", grad=linear("identity_loss"), no_grad_inputs=["X"])   # dOut spread as it reduced


def reducing(dout_slot: str, spread, second=None, x: str = "X"):
    """The maker of a loss grad op linear in ``dout_slot``: ``spread(g, rank)`` gives the dims of X (slot ``x``)
    that dOut was spread over (None: all); ``second(f, g, unit, ddx)``, when given, writes d/dX (``unit(loss
    grad)``: the grad op with that loss grad)."""
    x_grad = x + "@GRAD"

    def maker(g):
        f = Formula(g)
        ddx, dout, like = first(g.OG(x_grad)), first(g.I(dout_slot)), first(g.O(x_grad))
        values = {slot: g.I(slot) for slot in g.opdef.inputs if slot != dout_slot}

        def unit(loss_grad):
            return f.op(g.fwd.type, {**values, dout_slot: loss_grad}, like, slot=x_grad, same=True)

        wanted = first(g.IG(dout_slot))
        if wanted != EMPTY_VAR:
            scaled = f.mul(ddx, unit(f.fill_like(dout, 1.0)), like)
            if g.shape(dout) == g.shape(like):
                f.into(wanted, "scale", {"X": scaled}, {"scale": 1.0})
            else:
                f.summed_like(scaled, dout, spread(g, len(g.shape(like))), out=wanted)
        if second is not None:
            second(f, g, unit, ddx)
        return f.ops

    return maker


def _class_axis(axis: int):
    return lambda g, rank: None if g.attr("reduction") != "none" else [axis % rank]


def _cross_entropy_x(f, g, unit, ddx):
    """X@GRAD = -label dY / x (soft) or -dY / x at the label: d/dX = -X@GRAD ddX / x."""
    wanted, x = first(g.IG("X")), first(g.I("X"))
    if wanted != EMPTY_VAR:
        f.into(wanted, "scale", {"X": f.div(f.mul(unit(first(g.I("Y@GRAD"))), ddx, x), x, x)}, {"scale": -1.0})


def _cross_entropy_match(f, g, unit, ddx):
    """cross_entropy_grad2 puts -dY / MatchX at the label: d/d(MatchX) = dY ddX / MatchX^2 there, the grad op applied
    twice (to dY, then to minus what it put), without dividing where the label is ignored (MatchX 0).
    cross_entropy2's maker sends it on to X."""
    wanted = first(g.IG("MatchX"))
    if wanted != EMPTY_VAR:
        once = unit(first(g.I("Y@GRAD")))
        twice = unit(f.scale(f.sum_along(once, -1), -1.0))   # -dY / MatchX^2 at the label
        f.into(wanted, "scale", {"X": f.sum_along(f.mul(twice, ddx, twice), -1)}, {"scale": -1.0})


def _kldiv_target(f, g, unit, ddx):
    """X@GRAD = -w dLoss / scale: d/dTarget = ddX times the grad op with w's derivative for w (exp(t), w itself, with
    log_target; else 1 where t > 0)."""
    wanted, target, dloss = first(g.IG("Target")), first(g.I("Target")), first(g.I("Loss@GRAD"))
    if wanted == EMPTY_VAR:
        return
    if g.attr("log_target"):
        slope = unit(dloss)
    else:
        positive = f.unary("sign", f.unary("relu", target))
        slope = f.op(g.fwd.type, {"X": g.I("X"), "Target": positive, "Loss@GRAD": dloss}, first(g.O("X@GRAD")),
                     slot="X@GRAD", same=True)
    f.into(wanted, "elementwise_mul", {"X": ddx, "Y": slope}, {"axis": -1})


defgrad("kldiv_loss_grad", grad=reducing("Loss@GRAD", lambda g, rank: None, _kldiv_target), no_grad_inputs=["X"])
defgrad("nll_loss_grad", grad=reducing("Out@GRAD", _class_axis(1)),
        no_grad_inputs=["X", "Label", "Weight", "Total_weight"])
defgrad("cross_entropy_grad", grad=reducing("Y@GRAD", lambda g, rank: [rank - 1], _cross_entropy_x),
        no_grad_inputs=["Label"])
defgrad("cross_entropy_grad2", grad=reducing("Y@GRAD", lambda g, rank: [rank - 1], _cross_entropy_match),
        no_grad_inputs=["Label", "XShape"])


def _huber(g):
    """huber_loss_grad: Y@GRAD = -X@GRAD = slope(Residual) dOut, slope(r) = r inside |r| <= delta, +-delta past it:
    d/d(dOut) = slope(r) (ddY - ddX), d/d(Residual) = dOut (ddY - ddX) inside (huber_loss's maker sends it on)."""
    f = Formula(g)
    residual, dout = first(g.I("Residual")), first(g.I("Out@GRAD"))
    ddx, ddy = first(g.OG("X@GRAD")), first(g.OG("Y@GRAD"))
    if ddx is None:
        apart = ddy
    else:
        apart = f.sub(ddy, ddx, residual) if ddy is not None else f.op("scale", {"X": ddx}, residual, {"scale": -1.0})
    f.into(first(g.IG("Out@GRAD")), g.fwd.type, {"Residual": residual, "Out@GRAD": apart}, slot="Y@GRAD", same=True)
    delta = g.attr("delta")
    f.into(first(g.IG("Residual")), "brelu_grad", {"X": residual, "Out@GRAD": f.mul(dout, apart, residual)},
           {"t_min": -delta, "t_max": delta}, slot="X@GRAD")
    return f.ops


defgrad("huber_loss_grad", grad=_huber)
