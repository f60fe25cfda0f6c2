"""Kernels of gradc.ops.lod_rnn's lstm (and what gru's share: the batch layout, the activations). Each step runs
the sequences still going, in Paddle's batch-major layout: sequences sorted by length (longest first, ties in
order), step t holding row t of each sequence longer than t (counted from the end with is_reverse), so the
sequences of step t are the first ones of step t - 1. Computed in float64 (complex128 for the complex step of
lod_rnn_double's kernels), returned in Input's dtype. The grads run the forward again and walk the steps backwards.
gru and gru_unit are in lod_rnn_gru.py."""

from __future__ import annotations

import numpy as np

from ...ops.lod_rnn import ACTIVATIONS
from ..lod import SETS_LOD
from . import kernel
from .sequence_lod import offsets

SETS_LOD.add("lstm")

SIGMOID_RANGE = (-40.0, 13.0)   # Paddle's RNN sigmoid clamps its input to this range


def wide(value: np.ndarray) -> np.ndarray:
    """float64, or complex128 for a complex value."""
    return value.astype(np.complex128 if np.iscomplexobj(value) else np.float64)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


# name -> (forward, derivative from (input, output))
_ACTIVATIONS = {
    "sigmoid": (lambda z: _sigmoid(np.clip(z, *SIGMOID_RANGE)),
                lambda z, y: y * (1.0 - y) * ((z >= SIGMOID_RANGE[0]) & (z <= SIGMOID_RANGE[1]))),
    "sigmoid_v2": (_sigmoid, lambda z, y: y * (1.0 - y)),
    "tanh": (np.tanh, lambda z, y: 1.0 - y * y),
    "tanh_v2": (np.tanh, lambda z, y: 1.0 - y * y),
    "relu": (lambda z: np.maximum(z, 0.0), lambda z, y: (y > 0).astype(y.dtype)),   # 0 at the kink, as Paddle
    "identity": (lambda z: z, lambda z, y: np.ones_like(y)),
}
_ACTIVATIONS[""] = _ACTIVATIONS["identity"]


class Activation:
    """An activation by its attribute: ``act(z)`` and ``act.grad(z, y, dy)`` (dy times the derivative at z)."""

    def __init__(self, k, attr: str, name: str | None = None):
        name = k.attr(attr) if name is None else name
        if name not in _ACTIVATIONS:
            raise ValueError(f"{attr} {name!r} is not one of {list(ACTIVATIONS[:-1])}")
        self.forward, self.derivative = _ACTIVATIONS[name]

    def __call__(self, z):
        return self.forward(z)

    def grad(self, z, y, dy):
        return dy * self.derivative(z, y)


class Layout:
    """Paddle's batch layout of the sequences of one LoD level: ``order`` (the sequences by length, longest
    first), ``rows`` (the input row of each batch row), ``steps`` (the batch rows of each time step)."""

    def __init__(self, bounds: np.ndarray, reverse: bool):
        lengths = np.diff(bounds)
        self.order = np.argsort(-lengths, kind="stable")
        longest = int(lengths.max(initial=0))
        # the sequences longer than t, for each step t: linear in the rows (a count per step would be quadratic)
        counts = (len(lengths) - np.cumsum(np.bincount(lengths, minlength=longest))[:longest]).tolist()
        starts = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)
        self.steps = [slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
        first, last = bounds[:-1][self.order], bounds[1:][self.order] - 1
        self.rows = np.concatenate([(last[:n] - t) if reverse else (first[:n] + t) for t, n in enumerate(counts)]
                                   + [np.zeros(0, np.int64)]).astype(np.int64)

    def previous(self, t: int) -> slice:
        """The batch rows of step t - 1 that continue into step t."""
        step = self.steps[t]
        return slice(self.steps[t - 1].start, self.steps[t - 1].start + step.stop - step.start)

    def to_rows(self, batch: np.ndarray, rows: int) -> np.ndarray:
        """Batch-layout rows back in the input's row order."""
        out = np.zeros_like(batch, shape=(rows, *batch.shape[1:]))
        out[self.rows] = batch
        return out

    def unsorted(self, per_sequence: np.ndarray) -> np.ndarray:
        """Rows in the layout's sequence order (H0's grad, say) back in the sequences' order."""
        out = np.empty_like(per_sequence)
        out[self.order] = per_sequence
        return out


def sequences(k, reverse: bool) -> Layout:
    """The layout of Input's sequences: one LoD level only, as Paddle."""
    return Layout(offsets(k, "Input", at_most=1), reverse)


def initial_state(k, slot: str, layout: Layout, width: int, like: np.ndarray) -> np.ndarray:
    """H0 / C0 (one row per sequence) in the layout's order, in the dtype of ``like``; zeros when the slot is
    empty."""
    value = k.optional(slot)
    count = len(layout.order)
    if value is None:
        return np.zeros_like(like, shape=(count, width))
    if value.shape != (count, width):
        raise ValueError(f"{slot} has shape {list(value.shape)}, not [{count}, {width}] (a row per sequence of "
                         f"Input, hidden size {width})")
    return value.astype(like.dtype)[layout.order]


# ---------------------------------------------------------------- lstm

class LstmRun:
    """The forward of an lstm op, kept per batch row: pre-activations ``z`` and activated gates ``a`` [R, 4D]
    (candidate, input, forget, output), cells ``c``, activated cells ``ca``, hidden ``h``."""

    def __init__(self, k):
        x, self.w = wide(k.x("Input")), wide(k.x("Weight"))
        d = self.d = self.w.shape[0]
        if self.w.shape != (d, 4 * d) or x.ndim != 2 or x.shape[1] != 4 * d:
            raise ValueError(f"Input {list(x.shape)} and Weight {list(self.w.shape)} must be [rows, 4D] and [D, 4D]")
        bias = wide(k.x("Bias")).reshape(-1)
        peepholes = self.peepholes = k.attr("use_peepholes")
        if bias.size != (7 if peepholes else 4) * d:
            raise ValueError(f"Bias has {bias.size} values, not {7 if peepholes else 4} * D = "
                             f"{(7 if peepholes else 4) * d}" + (" (use_peepholes)" if peepholes else ""))
        self.peep = bias[4 * d:].reshape(3, d) if peepholes else np.zeros_like(bias, shape=(3, d))
        self.gate, self.cell = Activation(k, "gate_activation"), Activation(k, "cell_activation")
        self.cand = Activation(k, "candidate_activation")
        self.layout = layout = sequences(k, k.attr("is_reverse"))
        rows = len(layout.rows)
        self.z = x[layout.rows] + bias[:4 * d]
        self.h0, self.c0 = (initial_state(k, slot, layout, d, self.z) for slot in ("H0", "C0"))
        self.a = np.empty_like(self.z)
        self.c, self.ca, self.h = (np.empty_like(self.z, shape=(rows, d)) for _ in range(3))
        for t, step in enumerate(layout.steps):
            self._step(step, *self.previous(t))

    def previous(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """(h, c) before step t."""
        n = self.layout.steps[t].stop - self.layout.steps[t].start
        if t == 0:
            return self.h0[:n], self.c0[:n]
        before = self.layout.previous(t)
        return self.h[before], self.c[before]

    def _step(self, step: slice, h_prev, c_prev) -> None:
        d, z, a = self.d, self.z[step], self.a[step]
        z += h_prev @ self.w
        z[:, d:2 * d] += c_prev * self.peep[0]
        z[:, 2 * d:3 * d] += c_prev * self.peep[1]
        a[:, :d], a[:, d:3 * d] = self.cand(z[:, :d]), self.gate(z[:, d:3 * d])
        c = self.c[step] = a[:, :d] * a[:, d:2 * d] + c_prev * a[:, 2 * d:3 * d]
        z[:, 3 * d:] += c * self.peep[2]
        a[:, 3 * d:] = self.gate(z[:, 3 * d:])
        self.ca[step] = self.cell(c)
        self.h[step] = a[:, 3 * d:] * self.ca[step]

    def grads(self, dhidden: np.ndarray) -> dict[str, np.ndarray]:
        """Backpropagation through the steps: the grads of Input, H0, C0, Weight, Bias."""
        d, layout = self.d, self.layout
        dh_all = dhidden.astype(self.z.dtype)[layout.rows]
        dc_all = np.zeros_like(dh_all)
        dz_all = np.zeros_like(self.z)
        dw, dpeep = np.zeros_like(self.w), np.zeros_like(self.peep)
        dh0, dc0 = np.zeros_like(self.h0), np.zeros_like(self.c0)
        for t in reversed(range(len(layout.steps))):
            step = layout.steps[t]
            h_prev, c_prev = self.previous(t)
            z, a, c, ca = self.z[step], self.a[step], self.c[step], self.ca[step]
            cand, i, f, o = (a[:, g * d:(g + 1) * d] for g in range(4))
            dh = dh_all[step]
            dz = dz_all[step]
            dz[:, 3 * d:] = self.gate.grad(z[:, 3 * d:], o, dh * ca)
            dc = dc_all[step] + self.cell.grad(c, ca, dh * o) + dz[:, 3 * d:] * self.peep[2]
            dz[:, :d] = self.cand.grad(z[:, :d], cand, dc * i)
            dz[:, d:2 * d] = self.gate.grad(z[:, d:2 * d], i, dc * cand)
            dz[:, 2 * d:3 * d] = self.gate.grad(z[:, 2 * d:3 * d], f, dc * c_prev)
            dc_prev = dz[:, d:2 * d] * self.peep[0] + dz[:, 2 * d:3 * d] * self.peep[1] + dc * f
            dpeep += np.stack([(dz[:, d:2 * d] * c_prev).sum(0), (dz[:, 2 * d:3 * d] * c_prev).sum(0),
                               (dz[:, 3 * d:] * c).sum(0)])
            dh_prev = dz @ self.w.T
            dw += h_prev.T @ dz
            if t:
                before = layout.previous(t)
                dh_all[before] += dh_prev
                dc_all[before] += dc_prev
            else:
                dh0[:len(dh_prev)], dc0[:len(dc_prev)] = dh_prev, dc_prev
        bias = np.concatenate([dz_all.sum(0), dpeep.reshape(-1)] if self.peepholes else [dz_all.sum(0)])
        return {"Input@GRAD": layout.to_rows(dz_all, len(dhidden)), "H0@GRAD": layout.unsorted(dh0),
                "C0@GRAD": layout.unsorted(dc0), "Weight@GRAD": dw, "Bias@GRAD": bias}


@kernel("lstm")
def lstm(k):
    run, x = LstmRun(k), k.x("Input")
    lod = k.lod("Input")
    k.set_lod("Hidden", lod)
    k.set_lod("Cell", lod)
    rows = x.shape[0]
    return {"Hidden": run.layout.to_rows(run.h, rows).astype(x.dtype),
            "Cell": run.layout.to_rows(run.c, rows).astype(x.dtype),
            "BatchGate": run.a.astype(x.dtype), "BatchCellPreAct": run.ca.astype(x.dtype)}


@kernel("lstm_grad")
def lstm_grad(k):
    run, x = LstmRun(k), k.x("Input")
    return cast_grads(k, run.grads(k.x("Hidden@GRAD")),
                      {"Input@GRAD": x, "H0@GRAD": k.optional("H0"), "C0@GRAD": k.optional("C0"),
                       "Weight@GRAD": k.x("Weight"), "Bias@GRAD": k.x("Bias")})


def cast_grads(k, grads: dict, like: dict) -> dict:
    """The grads the op writes (of inputs it has), each shaped and typed like its input."""
    return k.grads({slot: (lambda slot=slot: grads[slot].reshape(like[slot].shape).astype(like[slot].dtype))
                    for slot in grads if like[slot] is not None})
