"""Second derivatives of gradc.ops.moe (moe_combine_grad: the bilinear rule; moe_combine_no_weight_grad: linear in
y@GRAD alone, so its grad is moe_combine_no_weight of ddx; moe_gate_dispatch(_auto, _permute)_grad and
moe_gate_dispatch_partial_nosoftmaxtopk_grad: linear in their output grads under the routing, which is flat, see
_dispatch_again and _partial_again):
cal_aux_loss_grad written again with differentiable ops, gate_prob@GRAD =
ones_like(gate_prob) ce (dl num_experts / moe_k / seqlen_float), linear in dl and flat in gate_prob (ce and
seqlen_float are saved outputs with no gradient of their own), and differentiated."""

from __future__ import annotations

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


def _kept(f, g, weights: str, like: str) -> str:
    """1 where a choice was kept (combine weight > 0), else 0, in ``like``'s dtype."""
    kept = f.op("greater_than", {"X": weights, "Y": f.fill_like(weights, 0.0)}, weights, dtype=VarType.BOOL)
    dtype = g.block.var(like).dtype
    return f.op("cast", {"X": kept}, weights, {"in_dtype": int(VarType.BOOL), "out_dtype": int(dtype)}, dtype=dtype)


def _rows_grad(f, g, mask: str, rows: str, ddx: str, target: str) -> None:
    """x@GRAD = moe_combine(rows, mask, scatter_index^T) (rows: y@GRAD's, one a dispatched choice), so the grad of
    rows is moe_combine_grad's x part at ddx, written into ``target``."""
    index = first(g.I("scatter_index"))
    transposed = f.op("transpose2", {"X": index}, index, {"axis": [1, 0]}, more={"XShape": f.xshape(index)},
                      dims=lambda s: s[::-1])
    ins = {"x": rows, "combine_weights": mask, "scatter_index": transposed, "y@GRAD": ddx}
    f.emit("moe_combine_grad", ins, {"x@GRAD": target})


def _partial_again(g):
    """The partial dispatch's grad is linear in (y@GRAD, combine_weights_out@GRAD) under the mask
    combine_weights_out > 0 (flat in it): x@GRAD = moe_combine(y@GRAD, mask, scatter_index^T), so d/d(y@GRAD) is
    moe_combine_grad's x part of ddx, and d/d(combine_weights_out@GRAD) is the grad op itself applied to ddw."""
    f = Formula(g)
    weights, dy = first(g.I("combine_weights_out")), first(g.I("y@GRAD"))
    ddx, ddw = first(g.OG("x@GRAD")), first(g.OG("combine_weights@GRAD"))
    d_dy, d_dw = first(g.IG("y@GRAD")), first(g.IG("combine_weights_out@GRAD"))
    if ddx is not None and d_dy not in (None, EMPTY_VAR):
        _rows_grad(f, g, _kept(f, g, weights, dy), dy, ddx, d_dy)
    if ddw is not None and d_dw not in (None, EMPTY_VAR):
        f.emit(g.fwd.type, {**g.fwd.inputs, "combine_weights_out@GRAD": ddw}, {"combine_weights@GRAD": d_dw}, same=True)
    return f.ops


def _dispatch_again(g):
    """The dispatch's grad is linear in (y@GRAD, combine_weights@GRAD) under the routing (flat in x and gate_logits):
    x@GRAD as the partial dispatch's (permute: y@GRAD's [local experts, ranks, capacity, d] moved to expert-major
    rows first), and gate_logits@GRAD[t, expert_id[t, j]] = combine_weights@GRAD[t, j] over the kept choices (a
    token's experts are distinct), so d/d(combine_weights@GRAD) picks ddgate there: take_along_axis times the mask."""
    f = Formula(g)
    weights, dy = first(g.I("combine_weights")), first(g.I("y@GRAD"))
    ddx, ddgate = first(g.OG("x@GRAD")), first(g.OG("gate_logits@GRAD"))
    d_dy, d_dw = first(g.IG("y@GRAD")), first(g.IG("combine_weights@GRAD"))
    mask = _kept(f, g, weights, weights)
    if ddx is not None and d_dy not in (None, EMPTY_VAR):
        if g.fwd.type != "moe_gate_dispatch_permute_grad":
            _rows_grad(f, g, mask, dy, ddx, d_dy)
        else:
            local, ranks, capacity, dim = g.shape(dy)
            order = {"axis": [1, 0, 2, 3]}
            moved = f.op("transpose2", {"X": dy}, dy, order, more={"XShape": f.xshape(dy)},
                         dims=lambda s: [s[1], s[0], *s[2:]])
            rows = f.op("reshape2", {"X": moved}, moved, {"shape": [-1, dim]}, more={"XShape": f.xshape(moved)},
                        dims=lambda s: [local * ranks * capacity, dim])
            grad_rows = g.tmp(rows)
            _rows_grad(f, g, mask, rows, ddx, grad_rows)
            blocks = f.op("reshape2", {"X": grad_rows}, moved, {"shape": [ranks, local, capacity, dim]},
                          more={"XShape": f.xshape(grad_rows)})
            f.into(d_dy, "transpose2", {"X": blocks}, order)
    if ddgate is not None and d_dw not in (None, EMPTY_VAR):
        picked = f.op("take_along_axis", {"Input": ddgate, "Index": first(g.I("expert_id"))}, weights, {"Axis": 1},
                      slot="Result")
        f.into(d_dw, "elementwise_mul", {"X": picked, "Y": mask})
    return f.ops


for twin in ("", "_auto"):
    defgrad(f"moe_combine{twin}_grad", grad=_combine_again, no_grad_inputs=["scatter_index"])
for dispatch in ("moe_gate_dispatch", "moe_gate_dispatch_auto", "moe_gate_dispatch_permute"):
    defgrad(f"{dispatch}_grad", grad=_dispatch_again, no_grad_inputs=["combine_weights", "scatter_index", "expert_id"])
defgrad("moe_combine_no_weight_grad", grad=_no_weight_again, no_grad_inputs=["x", "combine_weight", "scatter_index"])
defgrad("moe_gate_dispatch_partial_nosoftmaxtopk_grad", grad=_partial_again,
        no_grad_inputs=["combine_weights_out", "scatter_index", "scatter_index_rev", "expert_offset",
                        "expert_nums_local"])
