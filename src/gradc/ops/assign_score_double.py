"""Second derivative of assign_score_withk (gradc.ops.assign_score), with the ops themselves: F is bilinear in
scores S and the pair (points P, centers C), and its grad op G gives dS = G_S(P, C, dOut) and (dP, dC) = G_PC(S,
dOut). Through those grads, with ddS, ddP, ddC the grads of theirs (a missing one zeros):
    d/d(dOut) = F(S -> ddS) + F((P, C) -> (ddP, ddC)),   d/dS = G_S((P, C) -> (ddP, ddC), dOut),
    d/d(P, C) = G_PC(S -> ddS, dOut)."""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from .composite import Formula, first

PAIR = ("points", "centers")


def _dd(g, slot: str):
    name = first(g.OG(slot + "@GRAD"))
    return None if name in (None, EMPTY_VAR) else name


def _assign_score_double_grad(g):
    f = Formula(g)
    values = {slot: first(g.I(slot)) for slot in ("scores", *PAIR, "knn_idx", "output")}
    dout = first(g.I("output@GRAD"))
    varied = []
    if (dd := _dd(g, "scores")) is not None:
        varied.append(({**values, "scores": dd}, PAIR))
    if any(_dd(g, slot) is not None for slot in PAIR):
        pair = {slot: _dd(g, slot) or f.fill_like(values[slot], 0.0) for slot in PAIR}
        varied.append(({**values, **pair}, ("scores",)))
    if not varied:
        return []
    inputs = ("scores", *PAIR, "knn_idx")
    terms = [f.op("assign_score_withk", {s: args[s] for s in inputs}, dout, slot="output") for args, _ in varied]
    f.into(first(g.IG("output@GRAD")), "sum", {"X": terms})
    for args, reached in varied:
        wanted = {slot: first(g.IG(slot)) for slot in reached if first(g.IG(slot)) not in (None, EMPTY_VAR)}
        if wanted:
            f.emit("assign_score_withk_grad", {**args, "output@GRAD": dout},
                   {slot + "@GRAD": name for slot, name in wanted.items()})
    return f.ops


defgrad("assign_score_withk_grad", grad=_assign_score_double_grad, no_grad_inputs=["knn_idx", "output"])
