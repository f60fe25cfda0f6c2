"""Grad ops at the complex point of a complex step (gradc.ops.complex_step): a third backward through the second
derivative of cumprod or reduce_prod along dims of unknown size meets cumprod_grad / reduce_prod_grad at a complex
X (X -+ i h ddX). Their kernels conjugate X's factors (Paddle's convention: dOut times the conjugate partials), so
the op is C = J(conj X)^T dOut, J the forward's Jacobian, and for a loss of C with gradient ddC (dL/dRe + i dL/dIm):

    d/d(dOut) = J(X) ddC               the forward's tangent at X along ddC
    d/dX      = conj(H(X) ddC)         H the Hessian of <conj(dOut), forward>, symmetric, so a tangent too

The ops emitted, of gradc's own (Paddle has no second derivative of either), compute both with dual numbers,
exactly and without division (zeros too): the second imaginary unit a complex step of a complex step would need,
without a difference's cancellation. A fourth backward is refused by name."""

from __future__ import annotations

from .. import registry
from ..errors import GradError
from ..registry import defgrad, grads_like_inputs
from . import cumprod, reduce  # noqa: F401  (registers the forward ops whose attributes these take)


def at_complex_point(g) -> list:
    """The maker of ``g``'s grad op at a complex X: one <grad op>_grad reading X, dOut and the grad of X@GRAD."""
    dd = g.OG("X@GRAD")
    if not dd:
        return []
    return [g.op(f"{g.fwd.type}_grad", {"X": g.I("X"), "Out@GRAD": g.I("Out@GRAD"), "X@GRAD@GRAD": dd},
                 {"X@GRAD": g.IG("X"), "Out@GRAD@GRAD": g.IG("Out@GRAD")}, forward_attrs=True)]


def _fourth(g):
    raise GradError(f"{g.fwd.type}: gradc does not differentiate {g.fwd.type.removesuffix('_grad_grad')} four times "
                    "through a complex step: its third derivative takes exact tangents at the complex point, which "
                    "a fourth would need again")


for _forward in ("cumprod", "reduce_prod"):
    defgrad(f"{_forward}_grad_grad", inputs=["X", "Out@GRAD", "X@GRAD@GRAD"], outputs=["X@GRAD?", "Out@GRAD@GRAD?"],
            attrs=dict(registry.get(_forward).attrs), infer=grads_like_inputs, grad=_fourth, of=f"{_forward}_grad")
