"""Second derivative of bev_pool_v2 (gradc.ops.bev_pool), with the ops themselves: F is bilinear in depth and
feat and its grad op G gives each one's grad as G_s(the other, dOut). Through those grads, with dd_s the grads of
theirs, the loss reads <dOut, F(dd_depth, feat) + F(depth, dd_feat)>:
    d/d(dOut) = F(depth -> dd_depth) + F(feat -> dd_feat),   d/d(depth) = G_depth(feat -> dd_feat, dOut),
    d/d(feat) = G_feat(depth -> dd_depth, dOut)."""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from .bev_pool import RANKS
from .composite import Formula, first


def _bev_pool_double_grad(g):
    f = Formula(g)
    values = {slot: first(g.I(slot)) for slot in ("_depth", "_feat", *RANKS)}
    dout = first(g.I("out@GRAD"))
    varied = {slot: {**values, slot: dd} for slot in ("_depth", "_feat")
              if (dd := first(g.OG(slot + "@GRAD"))) not in (None, EMPTY_VAR)}
    if not varied:
        return []
    terms = [f.op("bev_pool_v2", args, dout, same=True, slot="out") for args in varied.values()]
    f.into(first(g.IG("out@GRAD")), "sum", {"X": terms})
    for slot, args in varied.items():
        other = "_feat" if slot == "_depth" else "_depth"
        wanted = first(g.IG(other))
        if wanted not in (None, EMPTY_VAR):
            f.emit("bev_pool_v2_grad", {**args, "out@GRAD": dout}, {other + "@GRAD": wanted}, same=True)
    return f.ops


defgrad("bev_pool_v2_grad", grad=_bev_pool_double_grad, no_grad_inputs=list(RANKS))
