"""Second derivatives of the suites' multi-scale deformable attention (gradc.ops.ms_deform_attn), with the ops
themselves (gradc.ops.composite).

With the sampling locations fixed, the op F is bilinear in Value and AttentionWeights, and its grad op G gives each
one's grad as G_s(the other, dOut). So through those grads, with dd_s the grads of theirs, the loss reads
<dOut, F(dd_Value, A) + F(V, dd_AttentionWeights)>:
    d/d(dOut) = F(Value -> dd_Value) + F(AttentionWeights -> dd_AttentionWeights),
    d/dt = the sum over s != t of G_t(s -> dd_s, dOut), t Value, AttentionWeights or SamplingLocations,
all exact. A loss reading SamplingLocations' grad needs the second derivatives of the bilinear weights, which no op
computes: refused with a GradError, as deformable convolution's Offset@GRAD is.
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR
from ..registry import defgrad
from .composite import Formula, first
from .ms_deform_attn import VARIANTS, slots_of


def _wanted(g, slot: str) -> str | None:
    """The grad op's output ``slot`` where it writes one the loss reaches."""
    name = first(g.O(slot))
    return name if name is not None and g.wants(name) else None


def _double_grad(forward: str):
    value, shapes, starts, loc, attn, out = slots_of(forward)

    def maker(g):
        if _wanted(g, loc + "@GRAD"):
            raise GradError(f"{forward}: gradc differentiates multi-scale deformable attention twice only through "
                            f"the grads of {value} and {attn}; the loss reads the sampling locations' gradient "
                            f"'{first(g.O(loc + '@GRAD'))}'")
        f = Formula(g)
        values = {slot: first(g.I(slot)) for slot in (value, shapes, starts, loc, attn)}
        dout = first(g.I(out + "@GRAD"))
        varied = {slot: {**values, slot: first(g.OG(slot + "@GRAD"))} for slot in (value, attn)
                  if _wanted(g, slot + "@GRAD")}
        if not varied:
            return []
        terms = [f.op(forward, args, dout, slot=out, same=True) for args in varied.values()]
        f.into(first(g.IG(out + "@GRAD")), "sum", {"X": terms})
        parts: dict[str, list[str]] = {}
        for slot, args in varied.items():
            wanted = {t: g.tmp(values[t]) for t in (value, loc, attn)
                      if t != slot and first(g.IG(t)) not in (None, EMPTY_VAR)}
            f.emit(f"{forward}_grad", {**args, out + "@GRAD": dout}, {t + "@GRAD": v for t, v in wanted.items()},
                   same=True)
            for t, v in wanted.items():
                parts.setdefault(t, []).append(v)
        for t, vs in parts.items():
            f.into(first(g.IG(t)), "sum", {"X": vs})
        return f.ops

    return maker


for _forward in VARIANTS:
    defgrad(f"{_forward}_grad", grad=_double_grad(_forward), no_grad_inputs=slots_of(_forward)[1:3])
