"""Kernels of warpctc_grad_grad and warprnnt_grad_grad (gradc.ops.sequence_loss_double): the sequence losses' second
derivatives where they cannot be unrolled (sizes known at run time only), by a complex step through the kernels' own
recursions. warpctc_grad gives Logits@GRAD = s G(Logits), G the gradient of each sequence's loss and s its Loss@GRAD
(over its length with norm_by_times). G's Jacobian is the loss's Hessian, symmetric, so the second backward's Logits
grad is s times G's derivative along ddLogits, and Loss@GRAD's is <G, ddLogits> per sequence (over its length with
norm_by_times): Im(G) / h and Re(G) of one run at Logits + i h ddLogits, exact to rounding. warprnntgrad is
P^T D g(P x), g the loss's gradient over the lattice's blanks and emissions P x and D the 1 + fastemit_lambda on the
emissions: its Jacobian's transpose times dd is P^T (g's derivative along D P dd), not symmetric unless D is 1."""

from __future__ import annotations

import numpy as np

from . import kernel
from .sequence_loss import RnntLattice, ctc_loss_and_grad

STEP = 2.0 ** -40   # the step's error is h^2 times the third-order terms: below rounding, and no difference cancels


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


@kernel("warprnnt_grad_grad")
def warprnnt_grad_grad(k):
    x, dd, dloss = k.x("input"), k.x("input@GRAD@GRAD").astype(np.float64), k.x("loss@GRAD")
    lattice = RnntLattice(k, x.shape)
    blank_dd, emit_dd = lattice.picked(dd)
    emit_dd = emit_dd * (1 + k.attr("fastemit_lambda"))
    blank, emit = lattice.picked(x.astype(np.float64))
    _, blank_grad, emit_grad = lattice.terms(blank + 1j * STEP * blank_dd, emit + 1j * STEP * emit_dd)
    scale = dloss.reshape(-1, 1, 1, 1).astype(np.float64)
    return k.grads({"input@GRAD": lambda: (lattice.spread(blank_grad.imag, emit_grad.imag) / STEP * scale)
                    .astype(x.dtype),
                    "loss@GRAD@GRAD": lambda: ((blank_grad.real * blank_dd).sum(axis=(1, 2)) +
                                               (emit_grad.real * emit_dd).sum(axis=(1, 2)))
                    .reshape(dloss.shape).astype(dloss.dtype)})

