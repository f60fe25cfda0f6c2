"""Second derivatives of gradc.ops.nn_activation: prelu, rrelu, maxout, gumbel_softmax, fused_softmax_mask (and its
upper-triangle form), composite
(gradc.ops.composite) so third derivatives follow. ``ddX`` is the grad of the grad op's output X@GRAD.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, OpDesc
from ..registry import defgrad
from . import nn_activation  # noqa: F401  (registers the grad ops given makers here)
from .activation_double import softmax_grad_maker, unary_double
from .composite import Formula, first
from .infer import same_as

# rrelu_grad is dOut times the Noise the forward drew: linear in dOut, flat in the rest
unary_double("rrelu_grad", flat=("X", "Noise"))


def _prelu(g):
    """prelu_grad: X@GRAD = dOut (1 where x > 0, alpha elsewhere), Alpha@GRAD = dOut x where x <= 0, summed per
    slope. Linear in dOut and in alpha, piecewise linear in x:
        d/d(dOut) = X@GRAD(dOut = ddX) + (prelu(x, ddAlpha) - relu(x)),
        d/dX = X@GRAD(alpha = ddAlpha, dOut where x <= 0),   d/dAlpha = Alpha@GRAD(x = -[x <= 0], dOut ddX) * -1."""
    f = Formula(g)
    x, alpha, dout = first(g.I("X")), first(g.I("Alpha")), first(g.I("Out@GRAD"))
    ddx, ddalpha = first(g.OG("X@GRAD")), first(g.OG("Alpha@GRAD"))

    def grad(slot, xv, slopes, d, like):   # both outputs written: Paddle's kernel writes both
        other = "Alpha@GRAD" if slot == "X@GRAD" else "X@GRAD"
        return f.op("prelu_grad", {"X": xv, "Alpha": slopes, "Out@GRAD": d}, like, slot=slot, same=True,
                    more={other: g.tmp(alpha if other == "Alpha@GRAD" else x)})

    def negative_part(value):   # value where x <= 0
        return f.sub(value, f.op("relu_grad", {"Out": x, "Out@GRAD": value}, x, slot="X@GRAD"), x)

    wanted = first(g.IG("Out@GRAD"))
    if wanted != EMPTY_VAR and ddx is not None:
        f.into(wanted, "scale", {"X": grad("X@GRAD", x, alpha, ddx, x)}, {"scale": 1.0})
    if wanted != EMPTY_VAR and ddalpha is not None:
        f.into(wanted, "prelu", {"X": negative_part(x), "Alpha": ddalpha}, same=True)
    wanted = first(g.IG("X"))
    if wanted != EMPTY_VAR and ddalpha is not None:
        f.into(wanted, "scale", {"X": grad("X@GRAD", x, ddalpha, negative_part(dout), x)}, {"scale": 1.0})
    wanted = first(g.IG("Alpha"))
    if wanted != EMPTY_VAR and ddx is not None:
        below = f.scale(f.op("relu_grad", {"Out": x, "Out@GRAD": f.fill_like(x, 1.0)}, x, slot="X@GRAD"), 1.0, -1.0)
        f.into(wanted, "scale", {"X": grad("Alpha@GRAD", below, alpha, f.mul(dout, ddx, x), alpha)}, {"scale": -1.0})
    return f.ops


defgrad("prelu_grad", grad=_prelu)


def _maxout(g):
    """maxout_grad sends dOut to each group's first maximum: d/d(dOut) sums ddX times that one-hot mask (the grad
    op for dOut = 1) over each group of ``groups`` adjacent channels."""
    wanted = first(g.IG("Out@GRAD"))
    if wanted == EMPTY_VAR:
        return []
    f = Formula(g)
    x, out, dout = first(g.I("X")), first(g.I("Out")), first(g.I("Out@GRAD"))
    mask = f.op("maxout_grad", {"X": x, "Out": out, "Out@GRAD": f.fill_like(dout, 1.0)}, x, slot="X@GRAD", same=True)
    groups, shape = g.attr("groups"), g.shape(x)
    channel_first = g.attr("axis") == 1   # [N, C, H, W] as [N, C / groups, groups, H W]; NHWC splits the last dim
    split = [0, shape[1] // groups, groups, -1] if channel_first else [0, 0, 0, shape[3] // groups, groups]
    grouped = f.op("reshape2", {"X": f.mul(first(g.OG("X@GRAD")), mask, x)}, x, {"shape": split},
                   more={"XShape": f.xshape(x)}, dims=lambda s: [s[0], *split[1:3], -1] if channel_first else
                   [*s[:3], *split[3:]])
    summed = f.reduce("reduce_sum", grouped, [2 if channel_first else 4], dout)
    f.shaped_like(summed, dout, out=wanted)
    return f.ops


defgrad("maxout_grad", grad=_maxout, no_grad_inputs=["X", "Out"])


def _gumbel_softmax(g):
    """gumbel_softmax_grad = out (d - sum(d out)) / temperature along the axis (the softmax's, Out being the
    noisy softmax): symmetric in d, so d/d(dOut) is the grad op applied to ddX; d/d(out) = (ddX (d - sum(d out))
    - d sum(ddX out)) / temperature."""
    f = Formula(g)
    out, dout, ddx, axis = first(g.I("Out")), first(g.I("Out@GRAD")), first(g.OG("X@GRAD")), g.attr("axis")
    f.into(first(g.IG("Out@GRAD")), g.fwd.type, {"Out": out, "Out@GRAD": ddx}, slot="X@GRAD", same=True)
    wanted = first(g.IG("Out"))
    if wanted != EMPTY_VAR:
        centred = f.sub(dout, f.sum_along(f.mul(dout, out, out), axis), out)
        moved = f.sub(f.mul(ddx, centred, out), f.mul(dout, f.sum_along(f.mul(ddx, out, out), axis), out), out)
        f.into(wanted, "scale", {"X": moved}, {"scale": 1.0 / g.attr("temperature")})
    return f.ops


defgrad("gumbel_softmax_grad", grad=_gumbel_softmax)


def _as_softmax_grad(out_slot: str):
    """The maker of a grad op that is softmax_grad along the last axis, its Out in ``out_slot``."""

    def maker(g):
        as_softmax = OpDesc("softmax_grad", {"Out": g.I(out_slot), "Out@GRAD": g.I("Out@GRAD")},
                            {"X@GRAD": g.O("X@GRAD")}, {"axis": -1})
        return softmax_grad_maker(g.for_op(as_softmax))

    return maker


# the grad op of fused_softmax_mask's maker (a composite maker, so registered here with its slots)
defgrad("fused_softmax_mask_grad", inputs=["Softmax", "Out@GRAD"], outputs=["X@GRAD"], of="fused_softmax_mask",
        infer=same_as("Softmax"),
        grad=_as_softmax_grad("Softmax"))

# the upper-triangle form's grad is the same softmax_grad: its masked columns have Out 0, so they get none
defgrad("fused_softmax_mask_upper_triangle_grad", inputs=["Out", "Out@GRAD"], outputs=["X@GRAD"],
        of="fused_softmax_mask_upper_triangle", infer=same_as("Out"), grad=_as_softmax_grad("Out"))
