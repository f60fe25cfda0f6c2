"""Second derivatives of gradc.ops.moe_permute: moe_unpermute_grad (gradc's own grad op) by the bilinear rule;
moe_permute's and batched_gemm's grads are moe_unpermute and batched_gemm, differentiated as themselves.

moe_unpermute_grad gives rows@GRAD[r] = w[r] dy[t(r)] and probs@GRAD[r] = dtopk[choice of r] (+ <rows[r], dy[t(r)]>
weighted), w = probs weighted, else 1: linear in (dy, dtopk), bilinear in (probs, dy) and (rows, dy) when weighted.
With ddrows, ddprobs the grads of its outputs:
    d/d(dy) = unpermute(ddrows, probs) + unpermute(rows, ddprobs) (weighted; unweighted: unpermute(ddrows))
    d/d(dtopk) = ddprobs at each choice's row (moe_unpermute's expert_prob_topk of ddprobs)
    d/drows = ddprobs[r] dy[t(r)],  d/dprobs = <ddrows[r], dy[t(r)]> (weighted only: moe_unpermute_grad again)."""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from .composite import Formula, first

_FIXED = ("zipped_expertwise_rowmap", "expert_routemap_topk")


def _unpermute_again(g):
    f = Formula(g)
    rows, probs, dy = (first(g.I(slot)) for slot in ("hidden_states_unzipped", "token_prob_unzipped",
                                                      "hidden_states@GRAD"))
    ddrows, ddprobs = first(g.OG("hidden_states_unzipped@GRAD")), first(g.OG("token_prob_unzipped@GRAD"))
    weighted, fixed = g.attr("using_weighted_combine"), {slot: first(g.I(slot)) for slot in _FIXED}
    d_dy, d_dtopk = first(g.IG("hidden_states@GRAD")), first(g.IG("expert_prob_topk@GRAD"))

    def wanted(name):
        return name not in (None, EMPTY_VAR)

    if weighted:
        calls = [(ddrows, probs, None), (rows, ddprobs, d_dtopk)]
    elif ddrows is None and ddprobs is None:
        calls = []
    else:   # one unweighted pass: dy's grad from ddrows, dtopk's from ddprobs (zeros where one is missing)
        calls = [(ddrows or f.fill_like(rows, 0.0), ddprobs or f.fill_like(probs, 0.0), d_dtopk)]
    terms = []
    for a, b, topk in calls:
        if a is None or b is None or not (wanted(d_dy) or wanted(topk)):
            continue
        hidden = g.tmp(dy)
        topk = topk if wanted(topk) else g.tmp(probs, lambda _: g.shape(fixed["expert_routemap_topk"]) or [-1, -1])
        outs = {"hidden_states": hidden, "expert_prob_topk": topk}
        f.emit("moe_unpermute", {"hidden_states_unzipped": a, "token_prob_unzipped": b, **fixed}, outs, same=True)
        terms.append(hidden)
    if wanted(d_dy) and terms:
        f.into(d_dy, "sum", {"X": terms})
    if weighted:
        for varied, kept, slot in ((ddprobs, "hidden_states_unzipped", "token_prob_unzipped"),
                                   (ddrows, "token_prob_unzipped", "hidden_states_unzipped")):
            target = first(g.IG(kept))
            if varied is not None and target not in (None, EMPTY_VAR):
                ins = {kept: first(g.I(kept)), slot: varied, "hidden_states@GRAD": dy, **fixed,   # dtopk: no part
                       "expert_prob_topk@GRAD": f.fill_like(first(g.I("expert_prob_topk@GRAD")), 0.0)}
                f.emit("moe_unpermute_grad", ins, {kept + "@GRAD": target}, same=True)
    return f.ops


defgrad("moe_unpermute_grad", grad=_unpermute_again, no_grad_inputs=list(_FIXED))
