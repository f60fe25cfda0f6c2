"""Kernels of gradc.ops.inference_rnn: fusion_gru and fusion_lstm run gradc's gru / lstm step (lod_rnn) on
XX = X WeightX, with WeightH as the recurrent Weight; computed in float64, returned in X's dtype."""

from __future__ import annotations

import numpy as np

from ..lod import SETS_LOD
from . import kernel
from .inference_fused import SlotView
from .lod_rnn import Activation, LstmRun
from .lod_rnn_gru import GruRun

SETS_LOD.update(("fusion_gru", "fusion_lstm", "fused_embedding_fc_lstm", "attention_lstm", "multi_gru"))


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


def _softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


@kernel("attention_lstm")
def attention_lstm(k):
    x, w, bias = (k.x(slot).astype(np.float64) for slot in ("X", "LSTMWeight", "LSTMBias"))
    att = k.x("AttentionWeight").astype(np.float64).reshape(-1)
    rows, m = x.shape
    d = w.shape[1] // 4
    if w.shape != (d + m, 4 * d) or att.size != m + d or bias.size != 4 * d:
        raise ValueError(f"LSTMWeight {list(w.shape)}, AttentionWeight and LSTMBias must be [D + M, 4D], [M + D, 1] "
                         f"and [1, 4D] for X [rows, M = {m}]")
    bounds = np.asarray(k.lod("X")[-1] if k.lod("X") else [0, rows], dtype=np.int64)
    h0, c0 = (None if (v := k.optional(slot)) is None else v.astype(np.float64) for slot in ("H0", "C0"))
    if c0 is None or c0.shape != (len(bounds) - 1, d):
        raise ValueError(f"C0 must be [sequences = {len(bounds) - 1}, D = {d}]")
    scalar, scalar_bias, att_bias = (k.optional(slot) for slot in ("AttentionScalar", "AttentionScalarBias",
                                                                    "AttentionBias"))
    gate, cell, cand = (Activation(k, name) for name in ("gate_activation", "cell_activation", "candidate_activation"))
    attended = x @ att[:m] + (0.0 if att_bias is None else float(att_bias.reshape(-1)[0]))
    hidden, cells = np.zeros((rows, d)), np.zeros((rows, d))
    for i, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:])):
        h, c = (None if h0 is None else h0[i]), c0[i]
        for t in range(start, stop):
            scores = np.maximum(attended[start:stop] + c @ att[m:], 0)
            if scalar is not None:   # Paddle's bias_relu: relu, with the bias added first when there is one
                scores = scores * float(scalar.reshape(-1)[0])
                scores = np.maximum(scores + (0.0 if scalar_bias is None else float(scalar_bias.reshape(-1)[0])), 0)
            z = _softmax(scores) @ x[start:stop] @ w[d:] + bias.reshape(-1) + (0.0 if h is None else h @ w[:d])
            forget, inp, out = (gate(z[g * d:(g + 1) * d]) for g in range(3))
            c = forget * c + inp * cand(z[3 * d:])
            h = cell(c) * out
            hidden[t], cells[t] = h, c
    k.set_lod("Hidden", k.lod("X"))
    k.set_lod("Cell", k.lod("X"))
    dtype = k.x("X").dtype
    return {"Hidden": hidden.astype(dtype), "Cell": cells.astype(dtype), "AttentionedX": attended.reshape(-1, 1)
            .astype(dtype)}


@kernel("multi_gru")
def multi_gru(k):
    x, weights_x, weights_h, biases = k.x("X"), k.xs("WeightX"), k.xs("WeightH"), k.xs("Bias") or None
    layers = k.attr("layers")
    if len(weights_x) != 2 * layers or len(weights_h) != 2 * layers or (biases and len(biases) != 2 * layers):
        raise ValueError(f"needs a forward and a reverse WeightX, WeightH (and Bias) per layer, {2 * layers} each")
    h = x.astype(np.float64)
    for layer in range(layers):
        directions = []
        for i in (2 * layer, 2 * layer + 1):   # forward, then reverse
            wx, wh = weights_x[i].astype(np.float64), weights_h[i]
            if wx.shape[0] != h.shape[1] or wx.shape[1] != 3 * wh.shape[0]:
                raise ValueError(f"WeightX[{i}] {list(wx.shape)} must be [{h.shape[1]}, 3 D] for WeightH[{i}] "
                                 f"{list(wh.shape)}")
            view = SlotView(k, {"Input": h @ wx, "Weight": wh, "Bias": None if biases is None else biases[i],
                                "H0": None}, {"is_reverse": i % 2 == 1}, lods={"Input": "X"})
            run = GruRun(view)
            directions.append(run.layout.to_rows(run.h, h.shape[0]))
        h = np.concatenate(directions, axis=1)
    k.set_lod("Hidden", k.lod("X"))
    return {"Hidden": h.astype(x.dtype)}
