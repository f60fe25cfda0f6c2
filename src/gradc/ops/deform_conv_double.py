"""Second derivatives of deformable convolution: with the offsets fixed, the convolution is linear in each of
Input, Filter and (v2) Mask (gradc.ops.multilinear_double has the formulas). Through Offset@GRAD the terms are the
Hessian of <dOut, F> times ddOffset: deformable_conv(_v1)_grad_grad (gradc's own ops; Paddle has no double grad of
deformable convolution), whose kernels differentiate the bilinear weights twice. They are linear along H and along
W inside a cell, so the derivatives are exact away from integer sampling positions; there (a new cell, or the edge
where a point stops reading) they are the cell's the first-order kernel reads, Paddle's one-sided choice.
"""

from __future__ import annotations

from ..registry import defgrad, grads_like_inputs
from . import deform_conv
from .composite import first
from .multilinear_double import through_operand_grads, through_position_tangents


def _deform_grad(forward: str, operands: tuple[str, ...]):
    def maker(g):
        values = {slot: first(g.I(slot)) for slot in ("Input", "Offset", "Filter", *operands[2:])}
        return through_operand_grads(g, forward, values, operands, targets=values, out="Output", position="Offset")

    return maker


def _deform_grad_grad(forward: str, operands: tuple[str, ...]):
    def maker(g):
        values = {slot: first(g.I(slot)) for slot in ("Input", "Offset", "Filter", *operands[2:])}
        return through_position_tangents(g, forward, values, operands, out="Output", position="Offset")

    return maker


for _name, _masked in deform_conv.DEFORM_OPS.items():
    _operands = ("Input", "Filter", *("Mask",) * _masked)
    defgrad(f"{_name}_grad", grad=_deform_grad(_name, _operands))
    defgrad(f"{_name}_grad_grad", inputs=["Input", "Offset", "Filter", *("Mask",) * _masked, "Output@GRAD",
                                          "Offset@GRAD@GRAD[]"],
            outputs=[f"{slot}@GRAD?" for slot in ("Input", "Offset", "Filter", *("Mask",) * _masked, "Output@GRAD")],
            attrs=dict(deform_conv.DEFORM_ATTRS), infer=grads_like_inputs, grad=_deform_grad_grad(_name, _operands),
            of=f"{_name}_grad")
