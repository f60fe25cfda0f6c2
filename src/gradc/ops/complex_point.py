"""Grad ops of products at points where Paddle's convention conjugates, with exact tangents on duals.

- cumprod_grad / reduce_prod_grad over dims of unknown size (their makers' scans need the size): their grads are
  <op>_grad_grad, the grad along a list of directions V of X (gradc.ops.directional_double), X@GRAD =
  conj(grad D_V <conj(dOut), F>(X)) and Out@GRAD@GRAD = D_V F(X), F the forward. The grad kernels conjugate complex
  factors (Paddle's: dOut times the conjugate partials), so the grad op is C = J(conj X)^T dOut, and for a loss of C
  with gradient ddC (dL/dRe + i dL/dIm) d/d(dOut) = J(X) ddC and d/dX = conj(H(X) ddC), H the Hessian of
  <conj(dOut), F>, symmetric: the op along V = [ddC]. Its makers emit it again with one more direction: every
  order, real or complex X, exactly and without division (zeros too).
- put_along_axis_grad with Reduce mul at the complex factors of its complex step (gradc.ops.select_double): it takes
  its factors as they are (no conjugates), so it is holomorphic, C = M(X, V) dOut, and its grads are
  d/d(dOut) = conj(M)^T ddC and, for a factor f_k of a run-time group with others O_k, d/df_k = conj(dOut T_k), T_k
  the tangent of O_k along conj(ddC) (the Hessian is symmetric again): put_along_axis_grad_grad, dual numbers, whose
  own grad (a fourth derivative) is refused by name.
"""

from __future__ import annotations

from .. import registry
from ..errors import GradError
from ..registry import defgrad, grads_like_inputs
from . import cumprod, reduce, select  # noqa: F401  (registers the forward ops whose attributes these take)
from .composite import first
from .directional_double import one_more_direction


def along_one_more_direction(g) -> list:
    """The maker of cumprod_grad / reduce_prod_grad over dims of unknown size and of their <grad>_grad: that op
    with one more direction (gradc.ops.directional_double)."""
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
            grad=along_one_more_direction, of=f"{_forward}_grad")
defgrad("put_along_axis_grad_grad", inputs=["Input", "Index", "Value", "Result@GRAD", "Input@GRAD@GRAD?",
                                           "Value@GRAD@GRAD?"],
        outputs=["Input@GRAD?", "Value@GRAD?", "Result@GRAD@GRAD?"], attrs=dict(registry.get("put_along_axis").attrs),
        infer=grads_like_inputs, grad=_fourth, no_grad_inputs=["Index"], of="put_along_axis_grad")
