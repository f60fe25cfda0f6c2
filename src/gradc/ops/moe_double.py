"""Second derivatives of gradc.ops.moe (moe_combine_grad: the bilinear rule; moe_combine_no_weight_grad: linear in
y@GRAD alone, so its grad is moe_combine_no_weight of ddx; moe_gate_dispatch_grad and
moe_gate_dispatch_partial_nosoftmaxtopk_grad: linear in its output grads, see _partial_again; moe_gate_dispatch_grad:
refused):
cal_aux_loss_grad written again with differentiable ops, gate_prob@GRAD =
ones_like(gate_prob) ce (dl num_experts / moe_k / seqlen_float), linear in dl and flat in gate_prob (ce and
seqlen_float are saved outputs with no gradient of their own), and differentiated."""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from .composite import Formula, expansion, first


@expansion
def _aux_again(f, g):
    gate, ce, dloss = first(g.I("gate_prob")), first(g.I("ce")), first(g.I("l_aux_loss@GRAD"))
    factor = g.attr("num_experts") / (g.attr("moe_k") if g.attr("use_group") else 1)
    per_token = f.div(f.scale(dloss, factor), first(g.I("seqlen_float")), dloss)
    row = f.mul(ce, per_token, ce)
    return {"gate_prob@GRAD": f.mul(f.fill_like(gate, 1.0), row, gate)}


defgrad("cal_aux_loss_grad", grad=_aux_again, no_grad_inputs=["seqlen_float", "ce"])


def _combine_again(g):
    """moe_combine is bilinear in x and combine_weights (scatter_index fixed): with ddx, ddw the grads of its grads,
    d/d(dy) = combine(ddx, w) + combine(x, ddw), d/dx = combine_grad(ddw, dy)'s x part, d/dw = combine_grad(ddx, dy)'s
    weight part."""
    f = Formula(g)
    x, weights, index, dy = (first(g.I(slot)) for slot in ("x", "combine_weights", "scatter_index", "y@GRAD"))
    ddx, ddw = first(g.OG("x@GRAD")), first(g.OG("combine_weights@GRAD"))
    terms = [f.op("moe_combine", {"x": a, "combine_weights": b, "scatter_index": index}, dy, slot="y")
             for a, b in ((ddx, weights), (x, ddw)) if a is not None and b is not None]
    if terms:
        f.into(first(g.IG("y@GRAD")), "sum", {"X": terms})
    for varied, grad_slot, kept in ((ddw, "x@GRAD", "x"), (ddx, "combine_weights@GRAD", "combine_weights")):
        if varied is not None and first(g.IG(kept)) not in (None, EMPTY_VAR):
            ins = {"x": x, "combine_weights": weights, "scatter_index": index, "y@GRAD": dy}
            ins["combine_weights" if kept == "x" else "x"] = varied
            f.emit("moe_combine_grad", ins, {grad_slot: first(g.IG(kept))})
    return f.ops


def _no_weight_again(g):
    """x@GRAD = A^T y@GRAD with A fixed by scatter_index: d/d(dy) = A ddx, and nothing reaches x."""
    f = Formula(g)
    ddx, target = first(g.OG("x@GRAD")), first(g.IG("y@GRAD"))
    if ddx is not None and target not in (None, EMPTY_VAR):
        ins = {"x": ddx, "combine_weight": first(g.I("combine_weight")), "scatter_index": first(g.I("scatter_index"))}
        f.emit("moe_combine_no_weight", ins, {"y": target}, attrs={"epsilon": g.attr("epsilon")})
    return f.ops


def _partial_again(g):
    """The partial dispatch's grad is linear in (y@GRAD, combine_weights_out@GRAD) under the mask
    combine_weights_out > 0 (flat in it): x@GRAD = moe_combine(y@GRAD, mask, scatter_index^T), so d/d(y@GRAD) is
    moe_combine_grad's x part of ddx, and d/d(combine_weights_out@GRAD) is the grad op itself applied to ddw."""
    f = Formula(g)
    weights, dy = first(g.I("combine_weights_out")), first(g.I("y@GRAD"))
    ddx, ddw = first(g.OG("x@GRAD")), first(g.OG("combine_weights@GRAD"))
    d_dy, d_dw = first(g.IG("y@GRAD")), first(g.IG("combine_weights_out@GRAD"))
    if ddx is not None and d_dy not in (None, EMPTY_VAR):
        kept = f.op("greater_than", {"X": weights, "Y": f.fill_like(weights, 0.0)}, weights, dtype=VarType.BOOL)
        mask = f.op("cast", {"X": kept}, weights, {"in_dtype": int(VarType.BOOL),
                                                   "out_dtype": int(g.block.var(dy).dtype)})
        rows = f.op("transpose2", {"X": first(g.I("scatter_index"))}, first(g.I("scatter_index")), {"axis": [1, 0]},
                    more={"XShape": f.xshape(first(g.I("scatter_index")))}, dims=lambda s: s[::-1])
        ins = {"x": dy, "combine_weights": mask, "scatter_index": rows, "y@GRAD": ddx}
        f.emit("moe_combine_grad", ins, {"x@GRAD": d_dy})
    if ddw is not None and d_dw not in (None, EMPTY_VAR):
        f.emit(g.fwd.type, {**g.fwd.inputs, "combine_weights_out@GRAD": ddw}, {"combine_weights@GRAD": d_dw}, same=True)
    return f.ops


def _dispatch_refused(g):
    forward = g.fwd.type.removesuffix("_grad")
    raise GradError(f"{g.fwd.type}: gradc does not differentiate it (a second derivative of {forward}): no maker of "
                    "second derivatives of the routing yet")


for twin in ("", "_auto"):
    defgrad(f"moe_combine{twin}_grad", grad=_combine_again, no_grad_inputs=["scatter_index"])
    defgrad(f"moe_gate_dispatch{twin}_grad", grad=_dispatch_refused)
defgrad("moe_gate_dispatch_permute_grad", grad=_dispatch_refused)
defgrad("moe_combine_no_weight_grad", grad=_no_weight_again, no_grad_inputs=["x", "combine_weight", "scatter_index"])
defgrad("moe_gate_dispatch_partial_nosoftmaxtopk_grad", grad=_partial_again,
        no_grad_inputs=["combine_weights_out", "scatter_index", "scatter_index_rev", "expert_offset",
                        "expert_nums_local"])
