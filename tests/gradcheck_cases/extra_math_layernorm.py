"""Cases for fused_bias_residual_layernorm (gradc.ops.extra_math_layernorm), whose grad maker is gradc's own: with
and without residual, bias, norm_weight and norm_bias (neither: no normalisation, out = h), residual_alpha != 1,
begin_norm_axis 0 to the rank; bias ignored (a zero grad) when normalising without a residual; the weights alone.
Second derivatives through the layer_norm_grad (and unsqueeze2) its maker emits, checked through whole programs."""

from __future__ import annotations

import math

from . import Case, rng
from .second_order import second_order

r = rng(47)
OP = "fused_bias_residual_layernorm"


def inputs(weight: bool = True, norm_bias: bool = False, bias: bool = False, residual: bool = False,
           shape: tuple = (2, 3, 4), axis: int = 2) -> dict:
    size = math.prod(shape[axis:])
    values = {"x": r.standard_normal(shape)}
    if weight:
        values["norm_weight"] = r.uniform(0.5, 1.5, size)
    if norm_bias:
        values["norm_bias"] = r.standard_normal(size)
    if bias:
        values["bias"] = r.standard_normal(shape[axis:])
    if residual:
        values["residual"] = r.standard_normal(shape)
    return values


def attrs(axis: int = 2, alpha: float = 1.0, epsilon: float = 1e-5) -> dict:
    return {"begin_norm_axis": axis, "residual_alpha": alpha, "epsilon": epsilon}


CASES = [
    Case(OP, inputs(norm_bias=True), attrs()),
    Case(OP, inputs(norm_bias=True, bias=True, residual=True), attrs(alpha=0.5)),
    Case(OP, inputs(bias=True, residual=True, axis=1), attrs(axis=1, alpha=1.0)),
    Case(OP, inputs(bias=True, axis=1), attrs(axis=1)),    # bias ignored without a residual: zero grad
    Case(OP, inputs(weight=False, norm_bias=True, residual=True), attrs(alpha=2.0, epsilon=0.1)),
    Case(OP, inputs(weight=False, bias=True, residual=True), attrs(alpha=0.7)),   # no normalisation: out = h
    Case(OP, inputs(weight=False, bias=True, axis=1), attrs(axis=1)),             # out = x + bias
    Case(OP, inputs(norm_bias=True, bias=True, residual=True, shape=(2, 3), axis=0), attrs(axis=0, alpha=1.5)),
    Case(OP, inputs(norm_bias=True, residual=True, axis=3), attrs(axis=3)),   # one element a row: out = norm_bias
    # only the weights wanted (x a fed input, as in a model): the maker still gives their grads
    Case(OP, inputs(norm_bias=True, bias=True, residual=True), attrs(alpha=0.5), wrt=["norm_weight", "norm_bias"]),
    Case(OP, inputs(norm_bias=True, axis=0, shape=(2, 3)), attrs(axis=0), wrt=["norm_weight"]),
    second_order(OP, inputs(norm_bias=True), attrs(), grad_type=OP),
    second_order(OP, inputs(norm_bias=True, bias=True, residual=True, axis=1), attrs(axis=1, alpha=0.5),
                 grad_type=OP),
    second_order(OP, inputs(residual=True, shape=(2, 3), axis=0), attrs(axis=0, alpha=0.5), grad_type=OP),
]
