"""Kernels of gradc.ops.inference_rnn: fusion_gru and fusion_lstm run gradc's gru / lstm step (lod_rnn) on
XX = X WeightX, with WeightH as the recurrent Weight; computed in float64, returned in X's dtype."""

from __future__ import annotations

import numpy as np

from ..lod import SETS_LOD
from . import kernel
from .inference_fused import SlotView
from .lod_rnn import LstmRun
from .lod_rnn_gru import GruRun

SETS_LOD.update(("fusion_gru", "fusion_lstm", "fused_embedding_fc_lstm"))


def _projected(k, gates: int) -> tuple[np.ndarray, SlotView]:
    """XX = X WeightX, and a view of the op as its recurrent op (Input XX, Weight WeightH, Input's LoD X's)."""
    x, wx, wh = k.x("X"), k.x("WeightX"), k.x("WeightH")
    if x.ndim != 2 or wx.ndim != 2 or wx.shape[0] != x.shape[1] or wh.ndim != 2 or wx.shape[1] != gates * wh.shape[0]:
        raise ValueError(f"X {list(x.shape)}, WeightX {list(wx.shape)} and WeightH {list(wh.shape)} must be "
                         f"[rows, M], [M, {gates} D] and [D, {gates} D]")
    xx = x.astype(np.float64) @ wx.astype(np.float64)
    return xx, SlotView(k, {"Input": xx, "Weight": wh}, lods={"Input": "X"})


@kernel("fusion_gru")
def fusion_gru(k):
    xx, view = _projected(k, 3)
    run, dtype, rows = GruRun(view), k.x("X").dtype, xx.shape[0]
    k.set_lod("Hidden", k.lod("X"))
    return {"Hidden": run.layout.to_rows(run.h, rows).astype(dtype), "XX": xx.astype(dtype),
            "BatchedInput": run.z.astype(dtype), "BatchedOut": run.h.astype(dtype),
            "ReorderedH0": run.h0.astype(dtype)}


@kernel("fusion_lstm")
def fusion_lstm(k):
    xx, view = _projected(k, 4)
    run, dtype, rows = LstmRun(view), k.x("X").dtype, xx.shape[0]
    lod = k.lod("X")
    k.set_lod("Hidden", lod)
    k.set_lod("Cell", lod)
    outs = {"Hidden": run.layout.to_rows(run.h, rows), "Cell": run.layout.to_rows(run.c, rows), "XX": xx,
            "BatchedInput": run.z, "BatchedHidden": run.h, "BatchedCell": run.c, "ReorderedH0": run.h0,
            "ReorderedC0": run.c0, "CheckedCell": run.ca}
    return {slot: value.astype(dtype) for slot, value in outs.items() if slot in ("Hidden", "Cell") or k.wants(slot)}


@kernel("fused_embedding_fc_lstm")
def fused_embedding_fc_lstm(k):
    ids, table, bias = k.x("Ids"), k.x("Embeddings"), k.x("Bias")
    if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
        raise ValueError(f"Ids holds ids outside Embeddings' {table.shape[0]} rows")
    xx = table.astype(np.float64)[ids.reshape(-1)]
    gates = np.concatenate([np.zeros(xx.shape[1]), bias.astype(np.float64).reshape(-1)[xx.shape[1]:]])
    run, dtype = LstmRun(SlotView(k, {"Input": xx, "Weight": k.x("WeightH"), "Bias": gates}, lods={"Input": "Ids"})), \
        table.dtype
    lod = k.lod("Ids")
    k.set_lod("Hidden", lod)
    k.set_lod("Cell", lod)
    rows = xx.shape[0]
    outs = {"Hidden": run.layout.to_rows(run.h, rows), "Cell": run.layout.to_rows(run.c, rows), "XX": xx,
            "BatchedInput": run.z, "BatchedHidden": run.h, "BatchedCell": run.c, "ReorderedH0": run.h0,
            "ReorderedC0": run.c0}
    return {slot: value.astype(dtype) for slot, value in outs.items() if slot in ("Hidden", "Cell") or k.wants(slot)}
