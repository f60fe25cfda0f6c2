"""The second derivative of an op F that is linear in each of several operands once its sampling positions are
fixed (grid_sampler, deformable convolution, multi-scale deformable attention), with F and its grad op G themselves.

G gives each operand's grad as G_s(the others, dOut). So through those grads, with dd_s the grads of theirs, the
loss reads <dOut, sum_s F(s -> dd_s)>:
    d/d(dOut) = sum_s F(s -> dd_s),   d/dt = sum over s != t of G_t(s -> dd_s, dOut),
for t any input G differentiates (the positions too), all exact. Through the positions' grad G_p, with dd_p the
grad of it, G's Jacobian is the Hessian of <dOut, F> (symmetric), so the terms are its product with dd_p: one op of
gradc's own, ``<F>_grad_grad``, whose kernel differentiates the bilinear weights twice (exact away from integer
positions, where the weights have kinks).
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from .composite import Formula, first


def wanted(g, slot: str) -> str | None:
    """The grad op's output ``slot`` where it writes one the loss reaches."""
    name = first(g.O(slot))
    return name if name is not None and g.wants(name) else None


def through_operand_grads(g, forward: str, values: dict[str, str], operands, targets, out: str,
                          position: str | None = None) -> list:
    """The ops of the formulas above: ``values`` the forward inputs the grad op reads, ``operands`` the slots F is
    linear in, ``targets`` the slots whose grads G writes, ``out`` F's output slot, ``position`` the slot of the
    sampling positions (its term emitted only where the loss reads their grad)."""
    dout = first(g.I(out + "@GRAD"))
    varied = {slot: {**values, slot: first(g.OG(slot + "@GRAD"))} for slot in operands if wanted(g, slot + "@GRAD")}
    f = Formula(g)
    parts: dict[str, list[str]] = {t: [] for t in (*targets, out + "@GRAD")}
    for args in varied.values():
        parts[out + "@GRAD"].append(f.op(forward, args, dout, slot=out, same=True))
    owed = [t for t in targets if first(g.IG(t)) not in (None, EMPTY_VAR)]
    for slot, args in varied.items():
        grads = {t: g.tmp(values[t]) for t in owed if t != slot}
        f.emit(g.fwd.type, {**args, out + "@GRAD": dout}, {t + "@GRAD": v for t, v in grads.items()}, same=True)
        for t, v in grads.items():
            parts[t].append(v)
    if position is not None and wanted(g, position + "@GRAD"):
        grads = {t: g.tmp(values.get(t, dout)) for t in (*owed, out + "@GRAD")
                 if first(g.IG(t)) not in (None, EMPTY_VAR)}
        direction = {position + "@GRAD@GRAD": first(g.OG(position + "@GRAD"))}
        f.emit(g.fwd.type + "_grad", {**values, out + "@GRAD": dout, **direction},
               {t + "@GRAD": v for t, v in grads.items()}, same=True)
        for t, v in grads.items():
            parts[t].append(v)
    for t, vs in parts.items():
        if vs:
            f.into(first(g.IG(t)), "sum", {"X": vs})
    return f.ops


def through_position_tangents(g, forward: str, values: dict[str, str], operands, out: str, position: str) -> list:
    """The maker of ``<F>_grad_grad``, whose outputs are the grads of T = D_V <dOut, F> (V the directions in
    ``position@GRAD@GRAD``, each a tangent of the positions): of each operand and the positions, and of dOut
    (D_V F). For cotangents c of them the loss reads D_c T, D_c the derivative along c in every input, and
    F is linear in each operand and in dOut, so D_c T = D_{V + [c_p]} <dOut, F> + sum_s D_V <dOut, F(s -> c_s)>
    (dOut -> c_dOut too): its grads in the inputs are those ops' outputs, and in a direction v_i, which T is linear
    in, the positions' grads of the same terms with v_i left out of V (``<F>_grad`` where none is left). So every
    order is this op again, with one more direction; the weights are multilinear per cell, so the kernels' terms of
    more directions than axes are 0."""
    dout, directions = first(g.I(out + "@GRAD")), g.I(position + "@GRAD@GRAD")
    at = {**values, out + "@GRAD": dout}
    targets = (*operands, position, out + "@GRAD")
    owed = {t: first(g.IG(t)) for t in targets if first(g.IG(t)) not in (None, EMPTY_VAR)}
    owed_directions = [(i, name) for i, name in enumerate(g.IG(position + "@GRAD@GRAD")) if name != EMPTY_VAR]
    f = Formula(g)
    parts: dict[str, list[str]] = {t: [] for t in owed}
    direction_parts: dict[int, list[str]] = {i: [] for i, _ in owed_directions}

    def emit(point: dict, tangents: list[str], wants: list[str]) -> dict[str, str]:
        """The op at ``point`` along ``tangents``, writing temporaries of the targets ``wants``."""
        grads = {t: g.tmp(at[t] if t != out + "@GRAD" else dout) for t in wants}
        if tangents:
            f.emit(g.fwd.type, {**point, position + "@GRAD@GRAD": tangents},
                   {t + "@GRAD": v for t, v in grads.items()}, same=True)
        else:
            f.emit(forward + "_grad", point, {t + "@GRAD": v for t, v in grads.items()}, same=True)
        return grads

    def term(point: dict, varied: str | None, tangents: list[str]) -> None:
        for t, v in emit(point, tangents, [t for t in owed if t != varied]).items():
            parts[t].append(v)
        for i, _ in owed_directions:
            direction_parts[i].append(emit(point, tangents[:i] + tangents[i + 1:], [position])[position])

    for slot, cotangent in ((s, s + "@GRAD") for s in operands):
        if wanted(g, cotangent):
            term({**at, slot: first(g.OG(cotangent))}, slot, directions)
    if wanted(g, out + "@GRAD@GRAD"):
        term({**at, out + "@GRAD": first(g.OG(out + "@GRAD@GRAD"))}, out + "@GRAD", directions)
    if wanted(g, position + "@GRAD"):
        term(at, None, [*directions, first(g.OG(position + "@GRAD"))])
    for t, vs in parts.items():
        if vs:
            f.into(owed[t], "sum", {"X": vs})
    for i, name in owed_directions:
        if direction_parts[i]:
            f.into(name, "sum", {"X": direction_parts[i]})
    return f.ops
