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
    pad = np.full(a.shape[:-1] + (abs(by),), NEG_INF)
    return np.concatenate([pad, a[..., :-by]], -1) if by > 0 else np.concatenate([a[..., -by:], pad], -1)


def _ctc(log_probs, ext, skip, times, states):
    """Per sequence, -log p(label) and the occupancy of each class at each step (the posterior of passing
    through it), from the forward (alpha) and backward (beta) variables over the extended label ``ext``
    (blanks around and between the labels; ``skip`` marks the labels reachable from two places back, the
    blank between two different labels being optional). alpha and beta both include their step's emission."""
    steps, batch, _ = log_probs.shape
    emit = np.take_along_axis(log_probs, np.broadcast_to(ext[None], (steps,) + ext.shape), axis=2)
    position = np.arange(ext.shape[1])
    alpha = np.full(emit.shape, NEG_INF)
    alpha[0] = np.where(position < np.minimum(states, 2)[:, None], emit[0], NEG_INF)
    for t in range(1, steps):
        prev = alpha[t - 1]
        alpha[t] = _logsumexp(prev, _shift(prev, 1), np.where(skip, _shift(prev, 2), NEG_INF)) + emit[t]
    skipped_to = np.zeros_like(skip)
    skipped_to[:, :-2] = skip[:, 2:]
    ends = (position >= states[:, None] - 2) & (position < states[:, None])
    beta = np.full(emit.shape, NEG_INF)
    for t in range(steps - 1, -1, -1):
        if t + 1 < steps:
            nxt = beta[t + 1]
            back = _logsumexp(nxt, _shift(nxt, -1), np.where(skipped_to, _shift(nxt, -2), NEG_INF)) + emit[t]
            beta[t] = np.where((t < times - 1)[:, None], back, NEG_INF)
        beta[t] = np.where(((t == times - 1)[:, None]) & ends, emit[t], beta[t])
    log_p = _logsumexp(beta[0, :, 0], beta[0, :, 1])
    with np.errstate(invalid="ignore"):
        occupancy = np.exp(alpha + beta - emit - log_p[None, :, None])
    occupancy = np.where(np.isfinite(log_p)[None, :, None], np.nan_to_num(occupancy), 0)
    per_class = np.zeros(log_probs.shape)
    np.add.at(per_class, (np.arange(steps)[:, None, None], np.arange(batch)[None, :, None], ext[None]), occupancy)
    return -log_p, per_class


@kernel("warpctc")
def warpctc(k):
    """Loss = -log p(label | softmax(Logits)) per sequence; WarpCTCGrad = its gradient w.r.t. Logits."""
    logits = k.x("Logits")
    steps, batch, classes = logits.shape
    times = _lengths(k, "LogitsLength", steps, low=1)
    sizes = _lengths(k, "LabelLength", k.x("Label").shape[1])
    labels = _labels(k, "Label", sizes, classes)
    ext = np.full((batch, 2 * labels.shape[1] + 1), k.attr("blank"), np.int64)
    ext[:, 1::2] = labels
    skip = np.zeros(ext.shape, bool)
    skip[:, 3::2] = labels[:, 1:] != labels[:, :-1]
    log_probs = log_softmax(logits.astype(np.float64), 2)
    loss, occupancy = _ctc(log_probs, ext, skip, times, 2 * sizes + 1)
    running = (np.arange(steps)[:, None] < times[None, :])[:, :, None]
    grad = np.where(running, np.exp(log_probs) - occupancy, 0)
    return {"Loss": loss.reshape(batch, 1).astype(logits.dtype), "WarpCTCGrad": grad.astype(logits.dtype)}


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
    """Forward (alpha) and backward (beta) log-variables of the RNN-T lattice [batch, time, label position]:
    ``blank`` is the log-probability of moving in time, ``emit`` (one label position fewer) of emitting the
    next label. beta includes the final blank; cells outside a sequence's lengths are -inf in beta."""
    batch, steps, states = blank.shape
    alpha = np.full(blank.shape, NEG_INF)
    alpha[:, 0, 0] = 0
    beta = np.full(blank.shape, NEG_INF)
    end = (np.arange(steps)[None, :, None] == times[:, None, None] - 1) & \
          (np.arange(states)[None, None, :] == sizes[:, None, None])
    inside = (np.arange(steps)[None, :, None] < times[:, None, None]) & \
             (np.arange(states)[None, None, :] <= sizes[:, None, None])
    for diagonal in range(1, steps + states - 1):  # cells on a diagonal depend only on the one before
        t, u = _cells(diagonal, steps, states)
        from_time = np.where(t > 0, alpha[:, t - 1, u] + blank[:, t - 1, u], NEG_INF)
        from_label = np.where(u > 0, alpha[:, t, u - 1] + emit[:, t, u - 1], NEG_INF)
        alpha[:, t, u] = _logsumexp(from_time, from_label)
    for diagonal in range(steps + states - 2, -1, -1):
        t, u = _cells(diagonal, steps, states)
        later = np.where(t + 1 < steps, beta[:, np.minimum(t + 1, steps - 1), u], NEG_INF) + blank[:, t, u]
        more = np.where(u + 1 < states, beta[:, t, np.minimum(u + 1, states - 1)], NEG_INF) + \
            emit[:, t, np.minimum(u, states - 2)]
        beta[:, t, u] = np.where(end[:, t, u], blank[:, t, u], np.where(inside[:, t, u], _logsumexp(later, more),
                                                                           NEG_INF))
    return alpha, beta


@kernel("warprnnt")
def warprnnt(k):
    """loss = -log p(label) per sequence, with ``input`` taken as log-probabilities as they are (Paddle's CPU
    kernel does not normalise them); warprnntgrad = d loss / d input, its label emissions scaled by
    1 + fastemit_lambda."""
    x = k.x("input")
    batch, steps, states, classes = x.shape
    times = _lengths(k, "input_lengths", steps, low=1)
    sizes = _lengths(k, "label_lengths", states - 1)
    labels = _labels(k, "label", sizes, classes)
    log_probs = x.astype(np.float64)
    blank = log_probs[..., k.attr("blank")]
    emit = np.take_along_axis(log_probs[:, :, :-1], labels[:, None, :, None], axis=3)[..., 0]
    alpha, beta = _rnnt(blank, emit, times, sizes)
    log_p = beta[:, 0, 0]
    final = np.zeros((batch, steps, states))  # the final blank ends the lattice: beta after it is log 1
    final[:, :-1] = beta[:, 1:]
    final = np.where(np.arange(steps)[None, :, None] == times[:, None, None] - 1,
                     np.where(np.arange(states) == sizes[:, None, None], 0, NEG_INF), np.where(
                         np.arange(steps)[None, :, None] < times[:, None, None] - 1, final, NEG_INF))
    grad = np.zeros(log_probs.shape)
    grad[..., k.attr("blank")] = -np.exp(alpha + blank + final - log_p[:, None, None])
    emitted = -np.exp(alpha[:, :, :-1] + emit + beta[:, :, 1:] - log_p[:, None, None])
    # padding labels may share the blank's class: their emissions are 0, so adding leaves the blank's grad
    grad[:, :, :-1] += (1 + k.attr("fastemit_lambda")) * emitted[..., None] * (labels[:, None, :, None] ==
                                                                             np.arange(classes))
    return {"loss": (-log_p).astype(x.dtype), "warprnntgrad": grad.astype(x.dtype)}


@kernel("warprnnt_grad")
def warprnnt_grad(k):
    return {"input@GRAD": k.x("warprnntgrad") * k.x("loss@GRAD").reshape(-1, 1, 1, 1)}
