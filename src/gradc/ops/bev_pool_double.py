"""Second derivative of bev_pool_v2 (gradc.ops.bev_pool), with the ops themselves: F is bilinear in depth and
feat and its grad op G gives each one's grad as G_s(the other, dOut). Through those grads, with dd_s the grads of
theirs, the loss reads <dOut, F(dd_depth, feat) + F(depth, dd_feat)>:
    d/d(dOut) = F(depth -> dd_depth) + F(feat -> dd_feat),   d/d(depth) = G_depth(feat -> dd_feat, dOut),
    d/d(feat) = G_feat(depth -> dd_depth, dOut).

The suite's hand-written bev_pool_v2_bkwd assigns (a later write to an element overwrites an earlier one), so its
outputs are written again with differentiable ops over the writes that stay, which bev_pool_v2_last_writes finds at
run time (a unique over the reversed ranks): each point's <dOut at its cell, feat at its pixel> times its depth mask,
scattered (added: the writes left are one per element) to its depth element, and dOut at its cell times its depth
times its interval's feat mask, scattered to its interval's pixel; then differentiated (composite.expansion).
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from .bev_pool import LAST_WRITES, RANKS
from .composite import Formula, expansion, first


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


def _flat(f: Formula, x: str) -> str:
    return f.op("reshape2", {"X": x}, x, {"shape": [-1]}, more={"XShape": f.xshape(x)}, dims=lambda _: [-1])


def _rows(f: Formula, x: str) -> str:
    """``x`` as rows of its last dim (the channels, whatever their count: flattened before it, not reshaped)."""
    return f.op("flatten_contiguous_range", {"X": x}, x, {"start_axis": 0, "stop_axis": -2},
                more={"XShape": f.xshape(x)}, dims=lambda s: [-1, s[-1]])


def _written_again(f: Formula, g) -> dict[str, str]:
    """bev_pool_v2_bkwd's _depth_grad and _feat_grad from the writes that stay."""
    dout, depth, feat = (first(g.I(slot)) for slot in ("_out_grad", "_depth", "_feat"))
    dtype = g.block.find_var(depth).dtype
    writes = {slot: g.tmp(depth, lambda _: [-1], dtype if slot.endswith("_last") else VarType.INT64)
              for slot in LAST_WRITES}
    f.emit("bev_pool_v2_last_writes", {slot: g.I(slot) for slot in RANKS}, writes, {"dtype": int(dtype)})
    flat_depth = _flat(f, depth)
    feat_rows, dout_rows = _rows(f, feat), _rows(f, dout)

    def gathered(x: str, index: str) -> str:
        return f.op("gather", {"X": x, "Index": index}, x, {"axis": 0}, dims=lambda s: [-1, *s[1:]])

    at_cell, at_pixel = gathered(dout_rows, writes["point_cell"]), gathered(feat_rows, writes["point_feat"])
    at_depth = gathered(flat_depth, writes["point_depth"])
    products = f.op("reduce_sum", {"X": f.mul(at_cell, at_pixel, at_cell)}, at_depth,
                    {"dim": [1], "keep_dim": False, "reduce_all": False})
    depth_values = f.mul(products, writes["depth_last"], at_depth)
    feat_values = f.mul(at_cell, f.mul(at_depth, writes["feat_last"], at_depth), at_cell, axis=0)

    def scattered(zeros_like: str, index: str, updates: str, like: str) -> str:
        placed = f.op("scatter", {"X": f.fill_like(zeros_like, 0.0), "Ids": index, "Updates": updates}, zeros_like,
                      {"overwrite": False})
        return f.shaped_like(placed, like)

    return {"_depth_grad": scattered(flat_depth, writes["point_depth"], depth_values, depth),
            "_feat_grad": scattered(feat_rows, writes["interval_feat"], feat_values, feat)}


defgrad("bev_pool_v2_bkwd", grad=expansion(_written_again))
