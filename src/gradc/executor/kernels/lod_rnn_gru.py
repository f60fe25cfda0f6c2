"""Kernels of gradc.ops.lod_rnn's gru (over LoD sequences, in the batch layout of lod_rnn.Layout) and gru_unit (one
step over a batch); both are the same GRU step, computed in float64 and returned in Input's dtype. The grads run the
forward again."""

from __future__ import annotations

import numpy as np

from ...ops.lod_rnn import GRU_UNIT_ACTIVATIONS
from ..lod import SETS_LOD
from . import kernel
from .lod_rnn import Activation, cast_grads, initial_state, sequences, wide

SETS_LOD.add("gru")


class GruCell:
    """The GRU step of Weight [D, 3D], whose first 2 D^2 values are W_ur [D, 2D] and the last D^2 W_c [D, D]."""

    def __init__(self, k, gate: Activation, act: Activation):
        w = wide(k.x("Weight"))
        d = self.d = w.shape[0]
        if w.shape != (d, 3 * d):
            raise ValueError(f"Weight has shape {list(w.shape)}, not [D, 3D]")
        self.w_ur, self.w_c = w.reshape(-1)[:2 * d * d].reshape(d, 2 * d), w.reshape(-1)[2 * d * d:].reshape(d, d)
        self.gate, self.act, self.origin = gate, act, k.attr("origin_mode")

    def gates_in(self, k, slot: str = "Input") -> np.ndarray:
        """The input projection plus Bias, [rows, 3D]."""
        x, bias = wide(k.x(slot)), k.optional("Bias")
        if x.ndim != 2 or x.shape[1] != 3 * self.d:
            raise ValueError(f"{slot} has shape {list(x.shape)}, not [rows, 3D = {3 * self.d}]")
        if bias is None:
            return x
        if bias.size != 3 * self.d:
            raise ValueError(f"Bias has {bias.size} values, not 3D = {3 * self.d}")
        return x + wide(bias).reshape(-1)

    def step(self, z: np.ndarray, h_prev: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """On the step's rows of z (input projection plus bias, made the pre-activations in place): the activated
        gates [u, r, c], r h_prev, and h."""
        d = self.d
        z[:, :2 * d] += h_prev @ self.w_ur
        a = np.empty_like(z)
        a[:, :2 * d] = self.gate(z[:, :2 * d])
        reset = a[:, d:2 * d] * h_prev
        z[:, 2 * d:] += reset @ self.w_c
        a[:, 2 * d:] = self.act(z[:, 2 * d:])
        u, c = a[:, :d], a[:, 2 * d:]
        h = u * h_prev + c - u * c if self.origin else h_prev - u * h_prev + u * c
        return a, reset, h

    def step_grad(self, z, a, reset, h_prev, dh) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The grads of the step's pre-activations [rows, 3D], of h_prev, W_ur and W_c."""
        d = self.d
        u, r, c = a[:, :d], a[:, d:2 * d], a[:, 2 * d:]
        dz = np.empty_like(z)
        keep, take = (u, 1.0 - u) if self.origin else (1.0 - u, u)   # h = keep h_prev + take c
        dz[:, :d] = self.gate.grad(z[:, :d], u, dh * (h_prev - c if self.origin else c - h_prev))
        dz[:, 2 * d:] = self.act.grad(z[:, 2 * d:], c, dh * take)
        dreset = dz[:, 2 * d:] @ self.w_c.T
        dz[:, d:2 * d] = self.gate.grad(z[:, d:2 * d], r, dreset * h_prev)
        dh_prev = dh * keep + dreset * r + dz[:, :2 * d] @ self.w_ur.T
        return dz, dh_prev, h_prev.T @ dz[:, :2 * d], reset.T @ dz[:, 2 * d:]

    def weight(self, dw_ur: np.ndarray, dw_c: np.ndarray) -> np.ndarray:
        return np.concatenate([dw_ur.reshape(-1), dw_c.reshape(-1)]).reshape(self.d, 3 * self.d)


class GruRun:
    """The forward of a gru op in the batch layout: pre-activations ``z`` and activated gates ``a`` [R, 3D],
    ``reset`` (r h_prev) and ``h``."""

    def __init__(self, k):
        self.cell = cell = GruCell(k, Activation(k, "gate_activation"), Activation(k, "activation"))
        self.layout = layout = sequences(k, k.attr("is_reverse"))
        self.z = cell.gates_in(k)[layout.rows]
        self.h0 = initial_state(k, "H0", layout, cell.d, self.z)
        rows = len(layout.rows)
        self.a, self.reset, self.h = np.empty_like(self.z), *(np.empty_like(self.z, shape=(rows, cell.d))
                                                              for _ in range(2))
        for t, step in enumerate(layout.steps):
            self.a[step], self.reset[step], self.h[step] = cell.step(self.z[step], self.previous(t))

    def previous(self, t: int) -> np.ndarray:
        step = self.layout.steps[t]
        return self.h0[:step.stop - step.start] if t == 0 else self.h[self.layout.previous(t)]

    def grads(self, dhidden: np.ndarray) -> dict[str, np.ndarray]:
        cell, layout = self.cell, self.layout
        dh_all = dhidden.astype(self.z.dtype)[layout.rows]
        dz_all = np.zeros_like(self.z)
        dw_ur, dw_c, dh0 = np.zeros_like(cell.w_ur), np.zeros_like(cell.w_c), np.zeros_like(self.h0)
        for t in reversed(range(len(layout.steps))):
            step = layout.steps[t]
            dz_all[step], dh_prev, dur, dc = cell.step_grad(self.z[step], self.a[step], self.reset[step],
                                                            self.previous(t), dh_all[step])
            dw_ur += dur
            dw_c += dc
            if t:
                dh_all[layout.previous(t)] += dh_prev
            else:
                dh0[:len(dh_prev)] = dh_prev
        return {"Input@GRAD": layout.to_rows(dz_all, len(dhidden)), "H0@GRAD": layout.unsorted(dh0),
                "Weight@GRAD": cell.weight(dw_ur, dw_c), "Bias@GRAD": dz_all.sum(0)}


@kernel("gru")
def gru(k):
    run, x = GruRun(k), k.x("Input")
    k.set_lod("Hidden", k.lod("Input"))
    return {"BatchGate": run.a.astype(x.dtype), "BatchResetHiddenPrev": run.reset.astype(x.dtype),
            "BatchHidden": run.h.astype(x.dtype), "Hidden": run.layout.to_rows(run.h, x.shape[0]).astype(x.dtype)}


@kernel("gru_grad")
def gru_grad(k):
    grads = GruRun(k).grads(k.x("Hidden@GRAD"))
    return cast_grads(k, grads, {"Input@GRAD": k.x("Input"), "H0@GRAD": k.optional("H0"),
                                  "Weight@GRAD": k.x("Weight"), "Bias@GRAD": k.optional("Bias")})


def _unit_activation(k, attr: str) -> Activation:
    code = k.attr(attr)
    if code not in range(len(GRU_UNIT_ACTIVATIONS)):
        raise ValueError(f"{attr} {code} is not one of 0 (identity), 1 (sigmoid), 2 (tanh), 3 (relu)")
    return Activation(k, attr, {"sigmoid": "sigmoid_v2", "tanh": "tanh_v2"}.get(GRU_UNIT_ACTIVATIONS[code],
                                                                                  GRU_UNIT_ACTIVATIONS[code]))


def _unit_run(k) -> tuple[GruCell, np.ndarray, np.ndarray, tuple]:
    """(cell, pre-activations, h_prev, the step's (gates, reset, h)) of a gru_unit op."""
    cell = GruCell(k, _unit_activation(k, "gate_activation"), _unit_activation(k, "activation"))
    z, h_prev = cell.gates_in(k), k.x("HiddenPrev").astype(np.float64)
    if h_prev.shape != (z.shape[0], cell.d):
        raise ValueError(f"HiddenPrev has shape {list(h_prev.shape)}, not [{z.shape[0]}, {cell.d}] (Input's rows, D)")
    return cell, z, h_prev, cell.step(z, h_prev)


@kernel("gru_unit")
def gru_unit(k):
    x = k.x("Input")
    gates, reset, h = _unit_run(k)[3]
    return {"Gate": gates.astype(x.dtype), "ResetHiddenPrev": reset.astype(x.dtype), "Hidden": h.astype(x.dtype)}


@kernel("gru_unit_grad")
def gru_unit_grad(k):
    cell, z, h_prev, (gates, reset, _) = _unit_run(k)
    dz, dh_prev, dw_ur, dw_c = cell.step_grad(z, gates, reset, h_prev, k.x("Hidden@GRAD").astype(np.float64))
    grads = {"Input@GRAD": dz, "HiddenPrev@GRAD": dh_prev, "Weight@GRAD": cell.weight(dw_ur, dw_c),
             "Bias@GRAD": dz.sum(0)}
    return cast_grads(k, grads, {"Input@GRAD": k.x("Input"), "HiddenPrev@GRAD": k.x("HiddenPrev"),
                                  "Weight@GRAD": k.x("Weight"), "Bias@GRAD": k.optional("Bias")})
