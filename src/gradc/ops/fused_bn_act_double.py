"""Second derivatives of gradc.ops.fused_bn_act's grad ops: each written again with differentiable ops and
differentiated (``expansion``), the batch's mean and 1 / sqrt(var + epsilon) recomputed from X so the second derivative
includes how they move with X. The relu's mask, sign(Y) (Y >= 0), is a constant: relu's second derivative is 0.

    g = dY sign(Y);  Z@GRAD = g;  Bias@GRAD = sum(g);  Scale@GRAD = sum(g xhat);
    X@GRAD = inv (g scale - mean(g scale) - xhat mean(g scale xhat))   (sums and means over all but the last dim)

fused_batch_norm_act with one value a channel passes X through: X@GRAD = g, no Scale or Bias grad.
"""

from __future__ import annotations

from math import prod

from ..registry import defgrad
from . import fused_bn_act  # noqa: F401  (registers the forward ops first)
from .composite import expansion, first


@expansion
def _bn_act_grad(f, g):
    x, y, dy, scale, stats = (first(g.I(slot)) for slot in ("X", "Y", "Y@GRAD", "Scale", "SavedMean"))
    axes = list(range(len(g.shape(x)) - 1))
    passed = f.mul(dy, f.unary("sign", y), x)
    grads = {"Z@GRAD": passed} if g.O("Z@GRAD") else {}
    shape = g.shape(x)
    single = shape is not None and min(shape) >= 0 and prod(shape) == shape[-1]
    if single and g.fwd.type == "fused_batch_norm_act_grad":   # one value a channel: Y = act(X), no Scale or Bias
        return {"X@GRAD": passed}
    if g.O("Bias@GRAD"):
        grads["Bias@GRAD"] = f.reduce("reduce_sum", passed, axes, stats)
    mean = f.reduce("reduce_mean", x, axes, stats)
    centred = f.sub(x, mean, x)
    inv = f.unary("rsqrt", f.scale(f.reduce("reduce_mean", f.unary("square", centred), axes, stats), 1.0,
                                   g.attr("epsilon")))
    xhat = f.mul(centred, inv, x)
    if g.O("Scale@GRAD"):
        grads["Scale@GRAD"] = f.reduce("reduce_sum", f.mul(passed, xhat, x), axes, stats)
    if g.O("X@GRAD"):
        scaled = f.mul(passed, scale, x)
        spread = f.mul(xhat, f.reduce("reduce_mean", f.mul(scaled, xhat, x), axes, stats), x)
        centred_grad = f.sub(scaled, f.reduce("reduce_mean", scaled, axes, stats), x)
        grads["X@GRAD"] = f.mul(f.sub(centred_grad, spread, x), inv, x)
    return grads


for _name in ("fused_batch_norm_act_grad", "fused_bn_add_activation_grad"):
    defgrad(_name, grad=_bn_act_grad, no_grad_inputs=["Bias", "Y", "SavedMean", "SavedVariance", "ReserveSpace"])
