"""The second derivative of an op F that is linear in each of several operands once its sampling positions are
fixed (deformable convolution, multi-scale deformable attention), with F and its grad op G themselves.

G gives each operand's grad as G_s(the others, dOut). So through those grads, with dd_s the grads of theirs, the
loss reads <dOut, sum_s F(s -> dd_s)>:
    d/d(dOut) = sum_s F(s -> dd_s),   d/dt = sum over s != t of G_t(s -> dd_s, dOut),
for t any input G differentiates (the positions too), all exact.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from .composite import Formula, first


def wanted(g, slot: str) -> str | None:
    """The grad op's output ``slot`` where it writes one the loss reaches."""
    name = first(g.O(slot))
    return name if name is not None and g.wants(name) else None


def through_operand_grads(g, forward: str, values: dict[str, str], operands, targets, out: str) -> list:
    """The ops of the formulas above: ``values`` the forward inputs the grad op reads, ``operands`` the slots F is
    linear in, ``targets`` the slots whose grads G writes, ``out`` F's output slot."""
    dout = first(g.I(out + "@GRAD"))
    varied = {slot: {**values, slot: first(g.OG(slot + "@GRAD"))} for slot in operands if wanted(g, slot + "@GRAD")}
    if not varied:
        return []
    f = Formula(g)
    terms = [f.op(forward, args, dout, slot=out, same=True) for args in varied.values()]
    f.into(first(g.IG(out + "@GRAD")), "sum", {"X": terms})
    parts: dict[str, list[str]] = {}
    for slot, args in varied.items():
        grads = {t: g.tmp(values[t]) for t in targets if t != slot and first(g.IG(t)) not in (None, EMPTY_VAR)}
        f.emit(g.fwd.type, {**args, out + "@GRAD": dout}, {t + "@GRAD": v for t, v in grads.items()}, same=True)
        for t, v in grads.items():
            parts.setdefault(t, []).append(v)
    for t, vs in parts.items():
        f.into(first(g.IG(t)), "sum", {"X": vs})
    return f.ops
