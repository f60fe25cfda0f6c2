"""Second derivatives of gradc.ops.weight_quant: weight_only_linear_grad (x@GRAD = out@GRAD W^T) is linear in
out@GRAD, its gradient there g W: weight_only_linear of the grad of x@GRAD, without bias."""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from .composite import first
from .weight_quant import LINEAR_ATTRS


def _again(g):
    wanted, seed = first(g.IG("out@GRAD")), first(g.OG("x@GRAD"))
    if wanted in (None, EMPTY_VAR) or seed in (None, EMPTY_VAR):
        return []
    return [g.op("weight_only_linear", {"x": [seed], "weight": g.I("weight"), "weight_scale": g.I("weight_scale")},
                 {"out": [wanted]}, {name: g.attr(name) for name in LINEAR_ATTRS})]


def _grad_infer(ctx):
    return {"x@GRAD": (ctx.shape("x"), ctx.dtype("x"))}


defgrad("weight_only_linear_grad", inputs=["x", "weight", "bias?", "weight_scale", "out@GRAD"], outputs=["x@GRAD?"],
        attrs=LINEAR_ATTRS, infer=_grad_infer, grad=_again, of="weight_only_linear",
        no_grad_inputs=["x", "weight", "bias", "weight_scale"])
