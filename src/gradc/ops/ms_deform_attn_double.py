"""Second derivatives of the suites' multi-scale deformable attention (gradc.ops.ms_deform_attn): with the sampling
locations fixed, the op is bilinear in Value and AttentionWeights (gradc.ops.multilinear_double has the formulas).
Through SamplingLocations' grad the terms are the Hessian of <dOut, F> times the grad of that grad:
ms_deform_attn_grad_grad / ms_deformable_attn_grad_grad (gradc's own ops; the suites define no double grad), whose
kernels differentiate the bilinear weights twice: exact away from integer pixel positions (x W - 1/2, y H - 1/2),
where the weights have kinks; there they are those of the cell the first-order kernels read.
"""

from __future__ import annotations

from ..registry import defgrad, grads_like_inputs
from .composite import first
from .ms_deform_attn import VARIANTS, slots_of
from .multilinear_double import through_operand_grads, through_position_tangents


def _double_grad(forward: str):
    value, shapes, starts, loc, attn, out = slots_of(forward)

    def maker(g):
        values = {slot: first(g.I(slot)) for slot in (value, shapes, starts, loc, attn)}
        return through_operand_grads(g, forward, values, (value, attn), targets=(value, loc, attn), out=out,
                                     position=loc)

    return maker


def _triple_grad(forward: str):
    value, shapes, starts, loc, attn, out = slots_of(forward)

    def maker(g):
        values = {slot: first(g.I(slot)) for slot in (value, shapes, starts, loc, attn)}
        return through_position_tangents(g, forward, values, (value, attn), out=out, position=loc)

    return maker


for _forward in VARIANTS:
    _value, _shapes, _starts, _loc, _attn, _out = slots_of(_forward)
    defgrad(f"{_forward}_grad", grad=_double_grad(_forward), no_grad_inputs=(_shapes, _starts))
    defgrad(f"{_forward}_grad_grad", inputs=[_value, _shapes, _starts, _loc, _attn, f"{_out}@GRAD",
                                             f"{_loc}@GRAD@GRAD[]"],
            outputs=[f"{slot}@GRAD?" for slot in (_value, _loc, _attn, f"{_out}@GRAD")], attrs=VARIANTS[_forward][2],
            infer=grads_like_inputs, grad=_triple_grad(_forward), no_grad_inputs=(_shapes, _starts),
            of=f"{_forward}_grad")
