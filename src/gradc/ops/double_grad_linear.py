"""Paddle's legacy second-derivative ops of ops linear in X, as `paddle.static.gradients` of a gradient writes them:
`pool2d_double_grad` (average pooling) and `pad3d_double_grad`. The first grad op is the forward's adjoint, linear in
dOut and flat in X, so the op is the forward at ddX: grad_x@GRAD in, grad_out@GRAD out, with the forward's attributes
(and pad3d's Paddings). Its grad maker writes the forward at ddX (``expansion``), so third derivatives work.
Kernels: gradc.executor.kernels.double_grad_linear.
"""

from __future__ import annotations

from ..ir import OpDesc
from ..registry import defgrad, get
from . import nn, pad  # noqa: F401  (the forwards: pool2d, pad3d)
from .composite import expansion, first
from .infer import InferContext


def _forward_infer(forward: str):
    """The forward's inference, with grad_x@GRAD as its X."""

    def infer(ctx):
        inputs = {**ctx.op.inputs, "X": ctx.op.input("grad_x@GRAD")}
        renamed = OpDesc(forward, inputs, {"Out": ctx.op.output("grad_out@GRAD")}, dict(ctx.op.attrs))
        return {"grad_out@GRAD": get(forward).infer(InferContext(renamed, ctx.block, ctx.op_idx))["Out"]}

    return infer


def _at_ddx(forward: str, passed: tuple[str, ...]):
    def expand(f, g):
        ddx = first(g.I("grad_x@GRAD"))
        given = {slot: g.I(slot) for slot in passed if g.I(slot)}
        return {"grad_out@GRAD": f.op(forward, {"X": ddx, **given}, ddx, same=True,
                                      dims=lambda shape: g.shape(first(g.O("grad_out@GRAD"))))}

    return expansion(expand)


for _type, _forward, _passed in (("pool2d_double_grad", "pool2d", ()), ("pad3d_double_grad", "pad3d", ("Paddings",))):
    defgrad(_type, inputs=["grad_x@GRAD", *(slot + "?" for slot in _passed)], outputs=["grad_out@GRAD"],
            attrs=get(_forward).attrs, infer=_forward_infer(_forward), grad=_at_ddx(_forward, _passed),
            no_grad_inputs=list(_passed), of=_forward + "_grad")
