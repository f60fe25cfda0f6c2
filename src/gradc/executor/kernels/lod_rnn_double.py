"""Kernels of lstm_grad_grad and gru_grad_grad (gradc.ops.lod_rnn_double): the LoD lstm's and gru's grad along k
directions of theta = (Input, H0, C0, Weight, Bias), through the first-order kernels' numpy code on duals nested once
per direction (gradc.executor.dual). The grad op computes F(theta, dH) = the gradient of phi = <dH, Hidden(theta)>
over theta, recomputing the forward from theta; the op gives D_V F (theta's grads) and D_V Hidden (dH's), exact,
with no step and no division (gradc.ops.directional_double)."""

from __future__ import annotations

import numpy as np

from ..dual import across, along_each, listed
from . import kernel
from .lod_rnn import LstmRun
from .lod_rnn_gru import GruRun


class _Directed:
    """A kernel context whose inputs read as float64 duals nested once per direction, each param moved along its
    ``directions`` (the others constants)."""

    def __init__(self, k, directions: dict, count: int):
        self._k, self._directions, self._count = k, directions, count

    def __getattr__(self, name: str):
        return getattr(self._k, name)

    def _directed(self, slot: str, value):
        if value is None:
            return None
        return along_each(value.astype(np.float64), self._directions.get(slot, [None] * self._count))

    def x(self, slot: str):
        return self._directed(slot, self._k.x(slot))

    def optional(self, slot: str):
        return self._directed(slot, self._k.optional(slot))


def _directional(k, run_type, params: tuple[str, ...]) -> dict:
    """The grad_grad op's outputs from one run on duals: each param's grad and Hidden@GRAD@GRAD, the parts along
    every direction."""
    count = len(k.op.inputs.get("Input@GRAD@GRAD", []))
    directions = {slot: listed(k, f"{slot}@GRAD@GRAD") for slot in params if k.has(f"{slot}@GRAD@GRAD")}
    dhidden = k.x("Hidden@GRAD")
    run = run_type(_Directed(k, directions, count))
    grads = run.grads(along_each(dhidden.astype(np.float64), [None] * count))
    values = {f"{slot}@GRAD": grads[f"{slot}@GRAD"] for slot in params}
    values["Hidden@GRAD@GRAD"] = run.layout.to_rows(run.h, len(dhidden))
    like = {f"{slot}@GRAD": k.optional(slot) for slot in params}
    like["Hidden@GRAD@GRAD"] = dhidden
    return k.grads({slot: (lambda slot=slot: across(values[slot], count).reshape(like[slot].shape)
                           .astype(like[slot].dtype)) for slot in values if like[slot] is not None})


kernel("lstm_grad_grad")(lambda k: _directional(k, LstmRun, ("Input", "H0", "C0", "Weight", "Bias")))
kernel("gru_grad_grad")(lambda k: _directional(k, GruRun, ("Input", "H0", "Weight", "Bias")))
