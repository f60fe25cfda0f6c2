"""Every order of an op whose grad op G(theta, dOut) = the gradient over theta of Phi = <dOut, F(theta)> is
recomputed by a kernel from theta alone (the fused rnn over a time dim of unknown size, the LoD lstm and gru, and
cumprod / reduce_prod at a complex point): one op of gradc's own, ``<G>_grad``, gives for directions V = v_1 ... v_k
of theta (its duplicable ``<theta slot>@GRAD@GRAD`` slots, direction i at places i n ... (i + 1) n - 1 of a slot of n
vars, @EMPTY@ where it is 0) the grads of T = D_V Phi: in theta, grad D_V Phi, and in dOut, D_V F. Its kernels
carry theta on duals nested once per direction (gradc.executor.dual.along): exact, no step, no division.

For cotangents c of those outputs the loss reads D_{c_theta} T + T(dOut -> c_dOut) = D_{V + [c_theta]} Phi +
D_V Phi(dOut -> c_dOut) (Phi is linear in dOut), so its grads in theta and dOut are the same op with one more
direction (and the op at c_dOut, whose own dOut grad is not the loss's), and in a direction v_i, which T is linear
in, theta's grads of the same two terms with v_i left out. So every order is this op again, with one more
direction; the first-order grad op's maker is the case k = 0 (no dOut grads to differentiate). A complex theta
follows Paddle's convention (dL/dRe + i dL/dIm): the kernels give conj(grad D_V Phi(theta, conj dOut)) there.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..makers import GradContext


def _given(names: list[str]) -> bool:
    return any(name != EMPTY_VAR for name in names)


def one_more_direction(g: GradContext, op: str, thetas: tuple[str, ...], douts: tuple[str, ...],
                       constants: tuple[str, ...] = ()) -> list:
    """The maker of ``g``, the grad op (k = 0) or ``op`` itself (k directions): ``op`` emitted with one more
    direction, and at the cotangents of the dOut grads, as the module says. ``thetas`` the slots of theta (the
    first always holds one var), ``douts`` those of the output grads, ``constants`` other inputs passed along."""
    counts = {slot: len(g.I(slot)) for slot in thetas}
    directed = g.fwd.type == op
    k = len(g.I(f"{thetas[0]}@GRAD@GRAD")) if directed else 0

    def direction(i: int) -> dict[str, list[str]]:
        return {s: g.I(f"{s}@GRAD@GRAD")[i * n:(i + 1) * n] for s, n in counts.items()}

    directions = [direction(i) for i in range(k)]
    cotangent = {s: g.OG(f"{s}@GRAD") or [EMPTY_VAR] * n for s, n in counts.items()}
    dout_cotangent = {s: g.OG(f"{s}@GRAD") for s in douts if directed and g.I(s)}
    owed = {s: g.IG(s) for s in (*thetas, *douts) if g.I(s)}
    owed_directions = [{s: g.IG(f"{s}@GRAD@GRAD")[i * n:(i + 1) * n] for s, n in counts.items()} for i in range(k)]
    ops, parts = [], {}

    def emit(at: dict[str, list[str]], along: list[dict], wants: dict[str, list[str]]) -> None:
        """``op`` at the output grads ``at`` along directions ``along``, its grads added into ``wants``."""
        if not any(_given(names) for names in wants.values()):
            return
        inputs = {s: g.I(s) for s in (*thetas, *constants) if g.I(s)} | {s: names for s, names in at.items() if names}
        inputs |= {f"{s}@GRAD@GRAD": [name for d in along for name in d[s]] for s, n in counts.items() if n}
        outputs = {}
        for slot, targets in wants.items():
            outputs[f"{slot}@GRAD"] = [g.tmp(var) if target != EMPTY_VAR else EMPTY_VAR
                                       for var, target in zip(g.I(slot), targets)]
            for temporary, target in zip(outputs[f"{slot}@GRAD"], targets):
                if target != EMPTY_VAR:
                    parts.setdefault(target, []).append(temporary)
        ops.append(g.op(op, inputs, outputs, forward_attrs=True))

    douts_at = {s: g.I(s) for s in douts if g.I(s)}
    theta_owed = {s: owed[s] for s in thetas if s in owed}
    if any(_given(names) for names in cotangent.values()):
        emit(douts_at, [*directions, cotangent], owed)
        for i, wants in enumerate(owed_directions):
            emit(douts_at, [*directions[:i], *directions[i + 1:], cotangent], wants)
    if any(_given(names) for names in dout_cotangent.values()):
        at = {s: dout_cotangent.get(s, [EMPTY_VAR] * len(names)) for s, names in douts_at.items()}
        emit(at, directions, theta_owed)
        for i, wants in enumerate(owed_directions):
            emit(at, [*directions[:i], *directions[i + 1:]], wants)
    alone = {summed[0]: target for target, summed in parts.items() if len(summed) == 1}
    for emitted in ops:   # a grad with one part is written by its op directly
        emitted.outputs = {slot: [alone.get(name, name) for name in names] for slot, names in emitted.outputs.items()}
    return ops + [g.op("sum", {"X": summed}, {"Out": [target]}) for target, summed in parts.items() if len(summed) > 1]


def along_one_more_direction(g: GradContext) -> list:
    """The maker of cumprod_grad / reduce_prod_grad over dims of unknown size and of their <grad>_grad: that op
    with one more direction (gradc.ops.directional_double)."""
    forward = g.fwd.type.removesuffix("_grad_grad").removesuffix("_grad")
    return one_more_direction(g, f"{forward}_grad_grad", ("X",), ("Out@GRAD",))
