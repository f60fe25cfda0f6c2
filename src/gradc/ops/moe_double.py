"""Second derivatives of gradc.ops.moe: cal_aux_loss_grad written again with differentiable ops, gate_prob@GRAD =
ones_like(gate_prob) ce (dl num_experts / moe_k / seqlen_float), linear in dl and flat in gate_prob (ce and
seqlen_float are saved outputs with no gradient of their own), and differentiated."""

from __future__ import annotations

from ..registry import defgrad
from .composite import expansion, first


@expansion
def _aux_again(f, g):
    gate, ce, dloss = first(g.I("gate_prob")), first(g.I("ce")), first(g.I("l_aux_loss@GRAD"))
    factor = g.attr("num_experts") / (g.attr("moe_k") if g.attr("use_group") else 1)
    per_token = f.div(f.scale(dloss, factor), first(g.I("seqlen_float")), dloss)
    row = f.mul(ce, per_token, ce)
    return {"gate_prob@GRAD": f.mul(f.fill_like(gate, 1.0), row, gate)}


defgrad("cal_aux_loss_grad", grad=_aux_again, no_grad_inputs=["seqlen_float", "ce"])
