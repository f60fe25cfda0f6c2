"""Grad ops at the complex point of a complex step (gradc.ops.complex_step): a third backward through the second
derivative of cumprod or reduce_prod along dims of unknown size meets cumprod_grad / reduce_prod_grad at a complex
X (X -+ i h ddX), and one through put_along_axis with Reduce mul meets put_along_axis_grad at complex Input and
Value. Their kernels conjugate X's factors (Paddle's convention: dOut times the conjugate partials), so
the op is C = J(conj X)^T dOut, J the forward's Jacobian, and for a loss of C with gradient ddC (dL/dRe + i dL/dIm):

    d/d(dOut) = J(X) ddC               the forward's tangent at X along ddC
    d/dX      = conj(H(X) ddC)         H the Hessian of <conj(dOut), forward>, symmetric, so a tangent too

The ops emitted, of gradc's own (Paddle has no second derivative of either), compute both with dual numbers,
exactly and without division (zeros too): the second imaginary unit a complex step of a complex step would need,
without a difference's cancellation. put_along_axis_grad takes its factors as they are (no conjugates), so it is
holomorphic, C = M(X, V) dOut, and its op's grads are d/d(dOut) = conj(M)^T ddC and, for a factor f_k of a run-time
group with others O_k, d/df_k = conj(dOut T_k), T_k the tangent of O_k along conj(ddC) (the Hessian is symmetric
again); the next backward is refused by name. cumprod's and reduce_prod's ops are those grads along directions
V of X, X@GRAD = conj(grad D_V <conj(dOut), F>) and Out@GRAD@GRAD = D_V F (V = [ddX] above), whose makers emit
them again with one more direction (gradc.ops.directional_double): every order, on duals nested once per
direction."""

from __future__ import annotations

from .. import registry
from ..errors import GradError
from ..registry import defgrad, grads_like_inputs
from . import cumprod, reduce, select  # noqa: F401  (registers the forward ops whose attributes these take)
from .composite import first
from .directional_double import one_more_direction


def at_complex_point(g) -> list:
    """The maker of cumprod_grad / reduce_prod_grad at a complex X and of their <grad>_grad: that op with one more
    direction (gradc.ops.directional_double)."""
    forward = g.fwd.type.removesuffix("_grad_grad").removesuffix("_grad")
    return one_more_direction(g, f"{forward}_grad_grad", ("X",), ("Out@GRAD",))


def put_at_complex_point(g) -> list:
    """The maker of put_along_axis_grad at complex factors: one put_along_axis_grad_grad reading the factors, dOut
    and the grads of Input@GRAD and Value@GRAD."""
    dd = {slot: g.OG(slot + "@GRAD") for slot in ("Input", "Value")}
    if not any(first(names) for names in dd.values()):
        return []
    return [g.op("put_along_axis_grad_grad", {"Input": g.I("Input"), "Index": g.I("Index"), "Value": g.I("Value"),
                                              "Result@GRAD": g.I("Result@GRAD"), "Input@GRAD@GRAD": dd["Input"],
                                              "Value@GRAD@GRAD": dd["Value"]},
                 {"Input@GRAD": g.IG("Input"), "Value@GRAD": g.IG("Value"),
                  "Result@GRAD@GRAD": g.IG("Result@GRAD")}, forward_attrs=True)]


def _fourth(g):
    forward = g.fwd.type.removesuffix("_grad_grad")
    raise GradError(f"{g.fwd.type}: gradc does not differentiate {forward}'s grad at a complex point again (a real "
                    f"input's fourth derivative through a complex step, a complex input's third): its exact tangents "
                    "are dual numbers of first order, and the next order would need them of second order; with the "
                    "dims' sizes known it is written with differentiable ops at every order")


for _forward in ("cumprod", "reduce_prod"):
    defgrad(f"{_forward}_grad_grad", inputs=["X", "Out@GRAD", "X@GRAD@GRAD[]?"],
            outputs=["X@GRAD?", "Out@GRAD@GRAD?"], attrs=dict(registry.get(_forward).attrs), infer=grads_like_inputs,
            grad=at_complex_point, of=f"{_forward}_grad")
defgrad("put_along_axis_grad_grad", inputs=["Input", "Index", "Value", "Result@GRAD", "Input@GRAD@GRAD?",
                                           "Value@GRAD@GRAD?"],
        outputs=["Input@GRAD?", "Value@GRAD?", "Result@GRAD@GRAD?"], attrs=dict(registry.get("put_along_axis").attrs),
        infer=grads_like_inputs, grad=_fourth, no_grad_inputs=["Index"], of="put_along_axis_grad")
