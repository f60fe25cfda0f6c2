"""Second derivatives of gradc.ops.detection_v1's grad ops. shuffle_channel_grad is linear in dOut (the inverse
shuffle), so its grad is the forward shuffle of ddX; the other two grad ops are written again with differentiable
ops from their inputs (``expansion``): affine_channel_grad's dX = dOut * Scale, dScale and dBias the sums of
dOut * X and dOut over all but the channel dim; add_position_encoding_grad's dX = alpha * dOut."""

from __future__ import annotations

from ..registry import defgrad
from . import detection_v1  # noqa: F401  (registers the grad ops given makers here)
from .composite import expansion, first, linear


@expansion
def _affine_channel_grad(f, g):
    x, scale, dout = first(g.I("X")), first(g.I("Scale")), first(g.I("Out@GRAD"))
    rank = len(g.shape(x))
    axis = 1 if g.attr("data_layout") == "NCHW" else rank - 1
    others = [d for d in range(rank) if d != axis]
    return {"X@GRAD": f.mul(dout, scale, x, axis=axis),
            "Scale@GRAD": f.reduce("reduce_sum", f.mul(dout, x, x), others, scale),
            "Bias@GRAD": f.reduce("reduce_sum", dout, others, scale)}


defgrad("affine_channel_grad", grad=_affine_channel_grad, no_grad_inputs=["Bias"])
defgrad("shuffle_channel_grad", grad=linear("shuffle_channel"))
defgrad("add_position_encoding_grad", grad=expansion(
    lambda f, g: {"X@GRAD": f.scale(first(g.I("Out@GRAD")), g.attr("alpha"))}), no_grad_inputs=["X"])
