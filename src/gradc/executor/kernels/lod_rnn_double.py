"""Kernels of lstm_grad_grad and gru_grad_grad (gradc.ops.lod_rnn_double): second derivatives of the LoD lstm and gru
by a complex step through the first-order kernels' numpy code. The grad op computes F(theta, dH) = the gradient of
phi = <dH, Hidden(theta)> over theta = (Input, H0, C0, Weight, Bias), recomputing the forward from theta. Its
Jacobian in theta is phi's Hessian, symmetric, so the second backward's theta grads, ddTheta^T dF/dtheta, are the
derivative of F along ddTheta; the grad of dH is the derivative of Hidden along ddTheta. Both are the imaginary parts
of one run at theta + i h ddTheta divided by h: exact to rounding for these analytic steps (no difference is taken)."""

from __future__ import annotations

import numpy as np

from ...ops.complex_step import STEP  # h = 2^-40: its square is below float64's rounding of the derivative
from ..dual import Dual
from . import kernel
from .lod_rnn import LstmRun
from .lod_rnn_gru import GruRun


class _Moved:
    """A kernel context whose inputs read complex, each slot of ``dd`` moved by i h dd."""

    def __init__(self, k, dd: dict):
        self._k, self._dd = k, dd

    def __getattr__(self, name: str):
        return getattr(self._k, name)

    def _moved(self, slot: str, value):
        if value is None:
            return None
        step = self._dd.get(slot)
        return value.astype(np.complex128) + (0 if step is None else 1j * STEP * step.reshape(value.shape))

    def x(self, slot: str):
        return self._moved(slot, self._k.x(slot))

    def optional(self, slot: str):
        return self._moved(slot, self._k.optional(slot))


def _second(k, run_type, params: tuple[str, ...]) -> dict:
    """The grad_grad op's outputs: each param's grad and Hidden@GRAD@GRAD, from one complex run."""
    dd = {slot: k.x(f"{slot}@GRAD@GRAD") for slot in params if k.has(f"{slot}@GRAD@GRAD")}
    dhidden = k.x("Hidden@GRAD")
    run = run_type(_Moved(k, dd))
    grads = run.grads(dhidden.astype(np.float64))
    hidden = run.layout.to_rows(run.h, len(dhidden))
    values = {f"{slot}@GRAD": grads[f"{slot}@GRAD"] for slot in params}
    values["Hidden@GRAD@GRAD"] = hidden
    like = {f"{slot}@GRAD": k.optional(slot) for slot in params}
    like["Hidden@GRAD@GRAD"] = dhidden
    return k.grads({slot: (lambda slot=slot: (values[slot].imag / STEP).reshape(like[slot].shape)
                           .astype(like[slot].dtype)) for slot in values if like[slot] is not None})


kernel("lstm_grad_grad")(lambda k: _second(k, LstmRun, ("Input", "H0", "C0", "Weight", "Bias")))
kernel("gru_grad_grad")(lambda k: _second(k, GruRun, ("Input", "H0", "Weight", "Bias")))


class _DualMoved(_Moved):
    """A kernel context whose inputs read as dual numbers at the complex point: each slot moved by i h dd, carrying
    the tangent of ``tangents`` (zero where none)."""

    def __init__(self, k, dd: dict, tangents: dict):
        super().__init__(k, dd)
        self._tangents = tangents

    def _moved(self, slot: str, value):
        moved = super()._moved(slot, value)
        if moved is None:
            return None
        tangent = self._tangents.get(slot)
        return Dual(moved, None if tangent is None else tangent.astype(np.complex128).reshape(value.shape))


def _third(k, run_type, params: tuple[str, ...]) -> dict:
    """The grad_grad_grad op's outputs from one run on duals (gradc.executor.kernels.rnn's rnn_grad_grad_grad): with
    v the step, a and b the cotangents of the params' grads and of Hidden@GRAD@GRAD, the params' and Hidden@GRAD's
    grads are Im(tangent) / h, the steps' Re(tangent)."""
    def given(suffix: str) -> dict:
        return {slot: k.x(f"{slot}{suffix}") for slot in params if k.has(f"{slot}{suffix}")}

    dhidden = k.x("Hidden@GRAD")
    hidden_tangent = k.optional("Hidden@GRAD@GRAD@COTANGENT")
    run = run_type(_DualMoved(k, given("@GRAD@GRAD"), given("@GRAD@COTANGENT")))
    grads = run.grads(Dual(dhidden.astype(np.complex128),
                           None if hidden_tangent is None else hidden_tangent.astype(np.complex128)))
    tangents = {f"{slot}@GRAD": grads[f"{slot}@GRAD"].tangent for slot in params}
    tangents["Hidden@GRAD@GRAD"] = run.layout.to_rows(run.h, len(dhidden)).tangent
    values = {slot: tangent.imag / STEP for slot, tangent in tangents.items()}
    values.update((f"{slot}@GRAD@GRAD@GRAD", tangents[f"{slot}@GRAD"].real) for slot in params)
    like = {f"{slot}{suffix}": k.optional(slot) for slot in params for suffix in ("@GRAD", "@GRAD@GRAD@GRAD")}
    like["Hidden@GRAD@GRAD"] = dhidden
    return k.grads({slot: (lambda slot=slot: values[slot].reshape(like[slot].shape).astype(like[slot].dtype))
                    for slot in values if like[slot] is not None})


kernel("lstm_grad_grad_grad")(lambda k: _third(k, LstmRun, ("Input", "H0", "C0", "Weight", "Bias")))
kernel("gru_grad_grad_grad")(lambda k: _third(k, GruRun, ("Input", "H0", "Weight", "Bias")))
