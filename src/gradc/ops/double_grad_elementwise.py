"""Paddle's legacy second-derivative ops of a difference and a quotient, as `paddle.static.gradients` of a gradient
writes them where a net normalises its inputs, (x - mean) / std (a PINN's coordinates): `elementwise_sub_grad_grad`
and `elementwise_div_grad_grad`. Slots are Paddle 3.3.1's. elementwise_div_grad is read as a function of Y, Out and
dOut (DX = dOut / Y, DY = -dOut Out / Y): for the grads ddX, ddY of DX, DY, DDOut = (ddX - Out ddY) / Y, DOut (Out's
grad) = -ddY DX and Y@GRAD = -DX DDOut summed to Y's shape; an absent ddX or ddY is zero. Each is written with ops
that have makers (``expansion``), so a training step of such a loss takes third derivatives. Kernels:
gradc.executor.kernels.double_grad_elementwise.
"""

from __future__ import annotations

from ..registry import defgrad
from .composite import first
from .double_grad import _ddout_of_sum, _like, _zeros_where_unreached
from .infer import same_as


@_zeros_where_unreached
def _sub_again(f, g):
    """ddOut = ddX - ddY."""
    return _ddout_of_sum(f, g, -1.0)


defgrad("elementwise_sub_grad_grad", inputs=["Y", "DOut", "DDX?", "DDY?"], outputs=["DDOut"], attrs={"axis": -1},
        infer=same_as("DOut", "DDOut"), grad=_sub_again, no_grad_inputs=["Y", "DOut"], of="elementwise_sub_grad")


@_zeros_where_unreached
def _div_again(f, g):
    y, out, dx, ddx, ddy = (first(g.I(s)) for s in ("Y", "Out", "DX", "DDX", "DDY"))
    axis = g.attr("axis")
    out_ddy = f.mul(out, ddy, out, axis) if ddy is not None else None
    numerator = (f.sub(ddx, out_ddy, out) if ddx is not None and out_ddy is not None
                 else ddx if ddx is not None else f.scale(out_ddy, -1.0) if out_ddy is not None else None)
    if numerator is None:
        return {}
    ddout = f.div(numerator, y, out, axis)
    grads = {"DDOut": ddout}
    if ddy is not None:
        grads["DOut"] = f.scale(f.mul(dx, ddy, out, axis), -1.0)
    spread = f.scale(f.mul(dx, ddout, out), -1.0)   # Y@GRAD before the sum: elementwise_add_grad sums it to Y
    grads["Y@GRAD"] = f.op("elementwise_add_grad", {"X": out, "Y": y, "Out@GRAD": spread}, y, {"axis": axis},
                           slot="Y@GRAD")
    return grads


defgrad("elementwise_div_grad_grad", inputs=["Y", "Out", "Out@GRAD?", "DX", "DDX?", "DDY?"],
        outputs=["Y@GRAD", "DOut", "DDOut"], attrs={"axis": -1},
        infer=_like(("Y", "Y@GRAD"), ("Out", "DOut"), ("Out", "DDOut")), grad=_div_again,
        no_grad_inputs=["Out@GRAD"], of="elementwise_div_grad")
