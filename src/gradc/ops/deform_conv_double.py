"""Second derivatives of deformable convolution: with the offsets fixed, the convolution is linear in each of
Input, Filter and (v2) Mask (gradc.ops.multilinear_double has the formulas). Offset@GRAD reached by the loss needs
the second derivatives of the bilinear weights, which no op computes: refused with a GradError, as grid_sampler's
Grid@GRAD is.
"""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad
from . import deform_conv
from .composite import first
from .multilinear_double import through_operand_grads, wanted


def _deform_grad(forward: str, operands: tuple[str, ...]):
    def maker(g):
        if wanted(g, "Offset@GRAD"):
            raise GradError(f"{g.fwd.type}: gradc differentiates deformable convolution twice only through the "
                            f"grads of {', '.join(operands)}; the loss reads the offsets' gradient "
                            f"'{first(g.O('Offset@GRAD'))}'")
        values = {slot: first(g.I(slot)) for slot in ("Input", "Offset", "Filter", *operands[2:])}
        return through_operand_grads(g, forward, values, operands, targets=values, out="Output")

    return maker


for _name, _masked in deform_conv.DEFORM_OPS.items():
    defgrad(f"{_name}_grad", grad=_deform_grad(_name, ("Input", "Filter", *("Mask",) * _masked)))
