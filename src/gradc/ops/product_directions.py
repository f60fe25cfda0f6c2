"""Grad ops of products along lists of directions, with exact tangents on duals.

- cumprod_grad / reduce_prod_grad over dims of unknown size (their makers' scans need the size): their grads are
  <op>_grad_grad, the grad along a list of directions V of X (gradc.ops.directional_double), X@GRAD =
  conj(grad D_V <conj(dOut), F>(X)) and Out@GRAD@GRAD = D_V F(X), F the forward. The grad kernels conjugate complex
  factors (Paddle's: dOut times the conjugate partials), so the grad op is C = J(conj X)^T dOut, and for a loss of C
  with gradient ddC (dL/dRe + i dL/dIm) d/d(dOut) = J(X) ddC and d/dX = conj(H(X) ddC), H the Hessian of
  <conj(dOut), F>, symmetric: the op along V = [ddC]. Its makers emit it again with one more direction: every
  order, real or complex X, exactly and without division (zeros too).
- put_along_axis_grad with Reduce mul (its groups are known when the indices are read): the same scheme on a real
  theta = (Input, Value), Index fixed. Its grad op is the gradient of <dOut, Result>, a polynomial in theta, so its
  grad is put_along_axis_grad_grad along the directions of Input and Value, whose kernel runs the grouped products on
  duals (each group a row padded with ones, the others' products from both ends: zeros need no division), and every
  later order that op with one more direction.
"""

from __future__ import annotations

from .. import registry
from ..registry import defgrad, grads_like_inputs
from . import cumprod, reduce, select  # noqa: F401  (registers the forward ops whose attributes these take)
from .directional_double import along_one_more_direction, one_more_direction


def put_along_one_more_direction(g) -> list:
    """The maker of put_along_axis_grad with Reduce mul and of put_along_axis_grad_grad: the latter with one more
    direction of (Input, Value) (gradc.ops.directional_double)."""
    return one_more_direction(g, "put_along_axis_grad_grad", ("Input", "Value"), ("Result@GRAD",), ("Index",))


for _forward in ("cumprod", "reduce_prod"):
    defgrad(f"{_forward}_grad_grad", inputs=["X", "Out@GRAD", "X@GRAD@GRAD[]?"],
            outputs=["X@GRAD?", "Out@GRAD@GRAD?"], attrs=dict(registry.get(_forward).attrs), infer=grads_like_inputs,
            grad=along_one_more_direction, of=f"{_forward}_grad")
defgrad("put_along_axis_grad_grad", inputs=["Input", "Index", "Value", "Result@GRAD", "Input@GRAD@GRAD[]?",
                                           "Value@GRAD@GRAD[]?"],
        outputs=["Input@GRAD?", "Value@GRAD?", "Result@GRAD@GRAD?"], attrs=dict(registry.get("put_along_axis").attrs),
        infer=grads_like_inputs, grad=put_along_one_more_direction, no_grad_inputs=["Index"],
        of="put_along_axis_grad")
