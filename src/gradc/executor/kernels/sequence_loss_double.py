"""Kernel of warpctc_grad_grad (gradc.ops.sequence_loss_double): warpctc_grad's second derivative where the loss
cannot be unrolled (its time steps, label length or classes known at run time only), by a complex step through
warpctc's own recursion. warpctc_grad gives Logits@GRAD = s G(Logits), G the gradient of each sequence's loss and s
its Loss@GRAD (over its length with norm_by_times). G's Jacobian is the loss's Hessian, symmetric, so the second
backward's Logits grad is s times G's derivative along ddLogits, and Loss@GRAD's is <G, ddLogits> per sequence (over
its length with norm_by_times): Im(G) / h and Re(G) of one run at Logits + i h ddLogits, exact to rounding."""

from __future__ import annotations

import numpy as np

from ...ops.complex_step import STEP
from . import kernel
from .sequence_loss import ctc_loss_and_grad


@kernel("warpctc_grad_grad")
def warpctc_grad_grad(k):
    logits, dd, dloss = k.x("Logits"), k.x("Logits@GRAD@GRAD"), k.x("Loss@GRAD")
    _, grad = ctc_loss_and_grad(k, logits.astype(np.complex128) + 1j * STEP * dd.astype(np.float64))
    per_sequence = np.ones(logits.shape[1])
    if k.attr("norm_by_times"):
        per_sequence = 1.0 / k.x("LogitsLength").reshape(-1).astype(np.float64)
    scale = (dloss.reshape(-1).astype(np.float64) * per_sequence)[None, :, None]
    return k.grads({"Logits@GRAD": lambda: (grad.imag / STEP * scale).astype(logits.dtype),
                    "Loss@GRAD@GRAD": lambda: ((grad.real * dd).sum(axis=(0, 2)) * per_sequence)
                    .reshape(dloss.shape).astype(dloss.dtype)})
