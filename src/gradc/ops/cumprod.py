"""cumprod: the running product along a dim, optionally exclusive (each entry leaves its own factor out) and
reversed. Its gradient (cumprod_grad reads X, Out and Out@GRAD) is computed without dividing by X, so zeros
in X get the product of the other factors."""

from __future__ import annotations

from ..registry import defop, grad_op
from .infer import same_as


def _cumprod_infer(ctx):
    ctx.axis(ctx.attr("dim"), max(len(ctx.shape("X")), 1))   # a 0-d X runs as [1]
    return same_as("X")(ctx)


defop("cumprod", ["X"], attrs={"dim": -1, "exclusive": False, "reverse": False}, infer=_cumprod_infer,
      grad=grad_op("X", "Out"))
