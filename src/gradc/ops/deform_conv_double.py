"""Second derivatives of deformable convolution, with the ops themselves (gradc.ops.composite).

With the offsets fixed, the convolution F is linear in each of Input, Filter and (v2) Mask, and its grad op G
gives each one's grad as G_s(the others, dOut). So through those grads, with dd_s the grads of theirs, the loss
reads <dOut, sum_s F(Input, ... with s -> dd_s)>:
    d/d(dOut) = sum_s F(s -> dd_s),   d/dt = sum over s != t of G_t(s -> dd_s, dOut) for t an operand or Offset,
all exact. Offset@GRAD reached by the loss needs the second derivatives of the bilinear weights, which no op
computes: refused with a GradError, as grid_sampler's Grid@GRAD is.
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR
from ..registry import defgrad
from . import deform_conv
from .composite import Formula, first


def _wanted(g, slot: str) -> str | None:
    """The grad op's output ``slot`` where it writes one the loss reaches."""
    name = first(g.O(slot))
    return name if name is not None and g.wants(name) else None


def _deform_grad(forward: str, operands: tuple[str, ...]):
    def maker(g):
        if _wanted(g, "Offset@GRAD"):
            raise GradError(f"{g.fwd.type}: gradc differentiates deformable convolution twice only through the "
                            f"grads of {', '.join(operands)}; the loss reads the offsets' gradient "
                            f"'{first(g.O('Offset@GRAD'))}'")
        f = Formula(g)
        values = {slot: first(g.I(slot)) for slot in ("Input", "Offset", "Filter", *operands[2:])}
        dout = first(g.I("Output@GRAD"))
        varied = {slot: {**values, slot: first(g.OG(slot + "@GRAD"))} for slot in operands
                  if _wanted(g, slot + "@GRAD")}
        if not varied:
            return []
        terms = [f.op(forward, args, dout, slot="Output", same=True) for args in varied.values()]
        f.into(first(g.IG("Output@GRAD")), "sum", {"X": terms})
        parts: dict[str, list[str]] = {}
        for slot, args in varied.items():
            wanted = {t: g.tmp(values[t]) for t in values if t != slot and first(g.IG(t)) not in (None, EMPTY_VAR)}
            f.emit(g.fwd.type, {**args, "Output@GRAD": dout}, {t + "@GRAD": v for t, v in wanted.items()}, same=True)
            for t, v in wanted.items():
                parts.setdefault(t, []).append(v)
        for t, vs in parts.items():
            f.into(first(g.IG(t)), "sum", {"X": vs})
        return f.ops

    return maker


for _name, _masked in deform_conv.DEFORM_OPS.items():
    defgrad(f"{_name}_grad", grad=_deform_grad(_name, ("Input", "Filter", *("Mask",) * _masked)))
