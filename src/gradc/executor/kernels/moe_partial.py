"""Kernels of moe_gate_dispatch_partial_nosoftmaxtopk and its grad (gradc.ops.moe), as the CUDA kernel routes:

- expert_offset [num_experts]: every choice's expert counted (all experts, no capacity; counts, despite the name)
- the choices of experts in [expert_start_index, expert_end_index) are ordered by expert, then rank j, then token
  (the radix sort of the key expert << bits | j); the others get combine weight 0 and scatter_index 0
- capacity: with use_pad each expert keeps its first `capacity` choices in that order; without, the first (or, with
  reverse_token_drop, the last) `capacity`; a dropped choice gets weight 0 and scatter_index 0
- each expert's kept choices are laid out by token; with use_pad at rows (e - start) capacity + place of y
  [(end - start) capacity, d] (scatter_index_rev there the token, num_rows on an empty row), else one after another
  in y [kept, d]; scatter_index [k, s] holds the row, y the token's x
- expert_nums_local: the kept count per expert in range (with use_pad: before the capacity cut, as the kernel counts)
Without use_pad and nothing kept, the kernel hands back an uninitialised y [1, d] and a 0-d scatter_index_rev: gradc
gives zeros.
"""

from __future__ import annotations

import numpy as np

from . import kernel


def _kept(k, ids: np.ndarray) -> tuple[list[list[tuple[int, int]]], np.ndarray]:
    """Each expert in range's kept (token, j) choices in token order, and the per-expert counts it reports."""
    experts, capacity = k.attr("num_experts"), k.attr("capacity")
    start, end, pad = k.attr("expert_start_index"), k.attr("expert_end_index"), k.attr("use_pad")
    if ids.size and (ids.min() < 0 or ids.max() >= experts):
        raise ValueError(f"expert_id holds experts outside [0, {experts})")
    kept, counts = [], np.zeros(experts, np.int64)
    for expert in range(start, end):
        chosen = sorted(((j, t) for t, j in zip(*np.nonzero(ids == expert))))   # by rank j, then token
        if pad or not k.attr("reverse_token_drop"):
            survivors = chosen[:capacity]
        else:
            survivors = chosen[max(len(chosen) - capacity, 0):]
        counts[expert] = len(chosen) if pad else len(survivors)
        kept.append(sorted((t, j) for j, t in survivors))
    return kept, counts


@kernel("moe_gate_dispatch_partial_nosoftmaxtopk")
def moe_gate_dispatch_partial_nosoftmaxtopk(k):
    x, ids = k.x("x"), k.x("expert_id")
    tokens, top, capacity = ids.shape[0], ids.shape[1], k.attr("capacity")
    kept, counts = _kept(k, ids)
    pad = k.attr("use_pad")
    rows = len(kept) * capacity if pad else sum(map(len, kept))
    y = np.zeros((max(rows, 1) if not pad else rows, x.shape[1]), x.dtype)
    rev = np.full(rows, tokens, np.int32)
    scatter, weights = np.zeros((top, tokens), np.int32), np.zeros_like(k.x("combine_weights"))
    row = 0
    for place, choices in enumerate(kept):
        row = place * capacity if pad else row
        for t, j in choices:
            scatter[j, t], weights[t, j], rev[row], y[row] = row, k.x("combine_weights")[t, j], t, x[t]
            row += 1
    return {"y": y, "combine_weights_out": weights, "scatter_index": scatter,
            "scatter_index_rev": rev if rows or pad else np.zeros((), np.int32),
            "expert_offset": np.bincount(ids.reshape(-1), minlength=k.attr("num_experts")).astype(np.int64),
            "expert_nums_local": counts}


@kernel("moe_gate_dispatch_partial_nosoftmaxtopk_grad")
def moe_gate_dispatch_partial_nosoftmaxtopk_grad(k):
    weights, scatter, dy = k.x("combine_weights_out"), k.x("scatter_index").astype(np.int64), k.x("y@GRAD")
    kept = weights > 0

    def dx():
        rows = dy[scatter.T].astype(np.float64) * kept[..., None]
        return rows.sum(1).astype(dy.dtype)

    return k.grads({"x@GRAD": dx,
                    "combine_weights@GRAD": lambda: np.where(kept, k.x("combine_weights_out@GRAD"), 0)
                    .astype(weights.dtype)})
