"""Second derivatives of the suites' multi-scale deformable attention (gradc.ops.ms_deform_attn): with the sampling
locations fixed, the op is bilinear in Value and AttentionWeights (gradc.ops.multilinear_double has the formulas).
A loss reading SamplingLocations' grad needs the second derivatives of the bilinear weights, which no op computes:
refused with a GradError, as deformable convolution's Offset@GRAD is.
"""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad
from .composite import first
from .ms_deform_attn import VARIANTS, slots_of
from .multilinear_double import through_operand_grads, wanted


def _double_grad(forward: str):
    value, shapes, starts, loc, attn, out = slots_of(forward)

    def maker(g):
        if wanted(g, loc + "@GRAD"):
            raise GradError(f"{forward}: gradc differentiates multi-scale deformable attention twice only through "
                            f"the grads of {value} and {attn}; the loss reads the sampling locations' gradient "
                            f"'{first(g.O(loc + '@GRAD'))}'")
        values = {slot: first(g.I(slot)) for slot in (value, shapes, starts, loc, attn)}
        return through_operand_grads(g, forward, values, (value, attn), targets=(value, loc, attn), out=out)

    return maker


for _forward in VARIANTS:
    defgrad(f"{_forward}_grad", grad=_double_grad(_forward), no_grad_inputs=slots_of(_forward)[1:3])
