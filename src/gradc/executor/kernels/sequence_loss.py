"""Kernels of gradc.ops.sequence_loss: forward-backward recursions in log space, vectorised over the batch
(and over the label positions, or the anti-diagonals of the RNN-T lattice), computed in float64 and
returned in the input's dtype."""

from __future__ import annotations

import numpy as np

from . import kernel
from .activation import log_softmax

NEG_INF = -np.inf


def _lengths(k, slot: str, limit: int, low: int = 0) -> np.ndarray:
    lengths = k.x(slot).reshape(-1).astype(np.int64)
    if ((lengths < low) | (lengths > limit)).any():
        raise ValueError(f"{slot} holds {lengths.tolist()}: each must be in [{low}, {limit}]")
    return lengths


def _labels(k, slot: str, lengths: np.ndarray, classes: int) -> np.ndarray:
    """The padded labels, with every label inside its length a class other than the blank."""
    labels = k.x(slot).astype(np.int64)
    used = np.arange(labels.shape[1]) < lengths[:, None]
    wrong = used & ((labels < 0) | (labels >= classes) | (labels == k.attr("blank")))
    if wrong.any():
        raise ValueError(f"{slot} holds {labels[wrong][0]}: labels must be classes in [0, {classes}) other "
                         f"than blank={k.attr('blank')}")
    return np.where(used, labels, 0)


def _logsumexp(*terms):
    stacked = np.stack(terms)
    top = stacked.max(axis=0)
    safe = np.where(np.isfinite(top), top, 0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(stacked - safe).sum(axis=0))


def _shift(a, by: int):
    """a moved ``by`` places along its last axis (right for by > 0, left for by < 0), -inf coming in."""
    width = a.shape[-1]
    by = max(-width, min(width, by))
    pad = np.full(a.shape[:-1] + (abs(by),), NEG_INF)
    return np.concatenate([pad, a[..., :width - by]], -1) if by > 0 else np.concatenate([a[..., -by:], pad], -1)


def _ctc(log_probs, ext, skip, times, states):
    """Per sequence, -log p(label) and the occupancy of each class at each step (the posterior of passing
    through it), from the forward (alpha) and backward (beta) variables over the extended label ``ext``
    (blanks around and between the labels; ``skip`` marks the labels reachable from two places back, the
    blank between two different labels being optional). alpha and beta both include their step's emission."""
    steps, batch, _ = log_probs.shape
    emit = np.take_along_axis(log_probs, np.broadcast_to(ext[None], (steps,) + ext.shape), axis=2)
    position = np.arange(ext.shape[1])
    alpha = np.full(emit.shape, NEG_INF, emit.dtype)   # complex too (warpctc_grad_grad's complex step)
    alpha[0] = np.where(position < np.minimum(states, 2)[:, None], emit[0], NEG_INF)
    for t in range(1, steps):
        prev = alpha[t - 1]
        alpha[t] = _logsumexp(prev, _shift(prev, 1), np.where(skip, _shift(prev, 2), NEG_INF)) + emit[t]
    skipped_to = np.zeros_like(skip)
    skipped_to[:, :-2] = skip[:, 2:]
    ends = (position >= states[:, None] - 2) & (position < states[:, None])
    beta = np.full(emit.shape, NEG_INF, emit.dtype)
    for t in range(steps - 1, -1, -1):
        if t + 1 < steps:
            nxt = beta[t + 1]
            back = _logsumexp(nxt, _shift(nxt, -1), np.where(skipped_to, _shift(nxt, -2), NEG_INF)) + emit[t]
            beta[t] = np.where((t < times - 1)[:, None], back, NEG_INF)
        beta[t] = np.where(((t == times - 1)[:, None]) & ends, emit[t], beta[t])
    log_p = _logsumexp(*beta[0, :, :2].T)  # starting with the first blank or the first label
    with np.errstate(invalid="ignore"):  # NaN for a label no alignment fits (log_p = -inf): the caller's case
        occupancy = np.exp(alpha + beta - emit - log_p[None, :, None])
    per_class = np.zeros(log_probs.shape, occupancy.dtype)
    np.add.at(per_class, (np.arange(steps)[:, None, None], np.arange(batch)[None, :, None], ext[None]), occupancy)
    return -log_p, per_class


def ctc_loss_and_grad(k, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """warpctc's loss [B] and its gradient w.r.t. ``logits`` [T, B, C] (float64, or complex128: every step is
    analytic), with the op's lengths, labels and blank."""
    steps, batch, classes = logits.shape
    times = _lengths(k, "LogitsLength", steps, low=1)
    sizes = _lengths(k, "LabelLength", k.x("Label").shape[1])
    labels = _labels(k, "Label", sizes, classes)
    ext = np.full((batch, 2 * labels.shape[1] + 1), k.attr("blank"), np.int64)
    ext[:, 1::2] = labels
    skip = np.zeros(ext.shape, bool)
    skip[:, 3::2] = labels[:, 1:] != labels[:, :-1]
    log_probs = log_softmax(logits, 2)
    loss, occupancy = _ctc(log_probs, ext, skip, times, 2 * sizes + 1)
    # a label no alignment fits (too many labels and repeats for its steps): warp-ctc gives loss 0, grad 0
    possible = np.isfinite(loss)
    running = (np.arange(steps)[:, None] < times[None, :]) & possible
    return np.where(possible, loss, 0), np.where(running[:, :, None], np.exp(log_probs) - occupancy, 0)


@kernel("warpctc")
def warpctc(k):
    """Loss = -log p(label | softmax(Logits)) per sequence; WarpCTCGrad = its gradient w.r.t. Logits."""
    logits = k.x("Logits")
    loss, grad = ctc_loss_and_grad(k, logits.astype(np.float64))
    return {"Loss": loss.reshape(-1, 1).astype(logits.dtype), "WarpCTCGrad": grad.astype(logits.dtype)}


@kernel("warpctc_grad")
def warpctc_grad(k):
    grad = k.x("WarpCTCGrad") * k.x("Loss@GRAD").reshape(1, -1, 1)
    if k.attr("norm_by_times"):
        grad = grad / k.x("LogitsLength").reshape(1, -1, 1).astype(grad.dtype)
    return {"Logits@GRAD": grad}


def _cells(diagonal: int, steps: int, states: int):
    """The lattice cells (t, u) with t + u = diagonal."""
    t = np.arange(max(0, diagonal - states + 1), min(steps - 1, diagonal) + 1)
    return t, diagonal - t


def _rnnt(blank, emit, times, sizes):
    """Log-variables of the RNN-T lattice [batch, time, label position]: ``blank`` is the log-probability of
    moving on in time, ``emit`` of emitting the next label (-inf at the last position). alpha: of reaching
    a cell; beta: of finishing from it, the final blank included (-inf outside a sequence's lengths);
    after_blank: beta of the cell a blank leads to (0 after the final blank)."""
    batch, steps, states = blank.shape
    t_grid, u_grid = np.arange(steps)[None, :, None], np.arange(states)[None, None, :]
    inside = (t_grid < times[:, None, None]) & (u_grid <= sizes[:, None, None])
    final = (t_grid == times[:, None, None] - 1) & (u_grid == sizes[:, None, None])
    alpha = np.full(blank.shape, NEG_INF, blank.dtype)   # complex too (warprnnt_grad_grad's complex step)
    alpha[:, 0, 0] = 0
    for diagonal in range(1, steps + states - 1):  # the cells of a diagonal depend only on the one before
        t, u = _cells(diagonal, steps, states)
        from_time = np.where(t > 0, alpha[:, t - 1, u] + blank[:, t - 1, u], NEG_INF)
        from_label = np.where(u > 0, alpha[:, t, u - 1] + emit[:, t, u - 1], NEG_INF)
        alpha[:, t, u] = _logsumexp(from_time, from_label)
    beta = np.full(blank.shape, NEG_INF, blank.dtype)
    for diagonal in range(steps + states - 2, -1, -1):
        t, u = _cells(diagonal, steps, states)
        later = np.where(final[:, t, u], 0, np.where(t + 1 < steps, beta[:, np.minimum(t + 1, steps - 1), u], NEG_INF))
        more = np.where(u + 1 < states, beta[:, t, np.minimum(u + 1, states - 1)], NEG_INF) + emit[:, t, u]
        beta[:, t, u] = np.where(inside[:, t, u], _logsumexp(later + blank[:, t, u], more), NEG_INF)
    after_blank = np.full(blank.shape, NEG_INF, blank.dtype)
    after_blank[:, :-1] = beta[:, 1:]
    return alpha, beta, np.where(final, 0, after_blank)


class RnntLattice:
    """The RNN-T lattice of warprnnt's input [B, T, U + 1, C] of log-probabilities: each cell's blank and label
    emission picked from it (``picked``), the loss and its gradient over them (``terms``), and such gradients put
    back in the input's classes (``spread``)."""

    def __init__(self, k, shape):
        batch, steps, states, self.classes = shape
        self.times = _lengths(k, "input_lengths", steps, low=1)
        self.sizes = _lengths(k, "label_lengths", states - 1)
        self.labels, self.blank = _labels(k, "label", self.sizes, self.classes), k.attr("blank")

    def picked(self, x):
        """(blank [B, T, U + 1], emit [B, T, U]) of ``x``, shaped like the input."""
        return x[..., self.blank], np.take_along_axis(x[:, :, :-1], self.labels[:, None, :, None], axis=3)[..., 0]

    def terms(self, blank, emit):
        """The loss [B] and its gradient over the blanks and the emissions (float64, or complex128: every step is
        analytic)."""
        pad = np.full(emit.shape[:2] + (1,), NEG_INF, emit.dtype)
        emit = np.concatenate([emit, pad], axis=2)
        alpha, beta, after_blank = _rnnt(blank, emit, self.times, self.sizes)
        log_p = beta[:, :1, :1]
        after_label = np.concatenate([beta[:, :, 1:], pad], axis=2)
        return (-log_p.reshape(-1), -np.exp(alpha + blank + after_blank - log_p),
                -np.exp(alpha + emit + after_label - log_p)[:, :, :-1])

    def spread(self, blank, emit):
        """Gradients over the blanks and the emissions as one over the input's classes."""
        grad = np.zeros(blank.shape + (self.classes,), blank.dtype)
        grad[..., self.blank] = blank
        # added, not set: a padding label may share the blank's class (its emission's gradient is 0)
        grad[:, :, :-1] += emit[..., None] * (self.labels[:, None, :, None] == np.arange(self.classes))
        return grad


@kernel("warprnnt")
def warprnnt(k):
    """loss = -log p(label) per sequence, with ``input`` taken as log-probabilities as they are (Paddle's CPU
    kernel does not normalise them); warprnntgrad = d loss / d input, its label emissions scaled by
    1 + fastemit_lambda."""
    x = k.x("input")
    lattice = RnntLattice(k, x.shape)
    loss, blank, emit = lattice.terms(*lattice.picked(x.astype(np.float64)))
    grad = lattice.spread(blank, (1 + k.attr("fastemit_lambda")) * emit)
    return {"loss": loss.astype(x.dtype), "warprnntgrad": grad.astype(x.dtype)}


@kernel("warprnnt_grad")
def warprnnt_grad(k):
    return {"input@GRAD": k.x("warprnntgrad") * k.x("loss@GRAD").reshape(-1, 1, 1, 1)}
