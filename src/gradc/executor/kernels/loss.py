"""Kernels of gradc.ops.loss."""

from __future__ import annotations

import numpy as np

from ...shapes import normalize_axis
from . import kernel
from .activation import log_softmax, sigmoid


def _class_axis(k, x):
    return normalize_axis(k.attr("axis"), x.ndim)


def _index(label, like, axis):
    """Integer labels shaped like ``like`` with the class axis of size 1."""
    index = label.astype(np.int64)
    return np.expand_dims(index, axis) if index.ndim == like.ndim - 1 else index


@kernel("softmax_with_cross_entropy")
def softmax_with_cross_entropy(k):
    logits, label = k.x("Logits"), k.x("Label")
    axis = _class_axis(k, logits)
    if k.attr("use_softmax"):
        log_prob = log_softmax(logits, axis)
        softmax = np.exp(log_prob)
    else:
        softmax = logits
        log_prob = np.log(logits)
    if k.attr("soft_label"):
        loss = -(label * log_prob).sum(axis=axis, keepdims=True)
    else:
        index = _index(label, logits, axis)
        ignored = index == k.attr("ignore_index")
        picked = np.take_along_axis(log_prob, np.where(ignored, 0, index), axis=axis)
        loss = np.where(ignored, 0, -picked)
    return {"Softmax": softmax, "Loss": loss}


@kernel("softmax_with_cross_entropy_grad")
def softmax_with_cross_entropy_grad(k):
    softmax, label, dloss = k.x("Softmax"), k.x("Label"), k.x("Loss@GRAD")
    axis = _class_axis(k, softmax)
    if k.attr("soft_label"):
        target = label
    else:
        index = _index(label, softmax, axis)
        ignored = index == k.attr("ignore_index")
        target = np.zeros_like(softmax)
        np.put_along_axis(target, np.where(ignored, 0, index), 1, axis=axis)
        dloss = np.where(ignored, 0, dloss)
    if k.attr("use_softmax"):  # the grad of -sum(target * log_softmax), also for soft labels not summing to 1
        return {"Logits@GRAD": (softmax * target.sum(axis=axis, keepdims=True) - target) * dloss}
    return {"Logits@GRAD": -target / softmax * dloss}


@kernel("cross_entropy2")
def cross_entropy2(k):
    x, label = k.x("X"), k.x("Label").astype(np.int64)
    ignored = label == k.attr("ignore_index")
    match = np.take_along_axis(x, np.where(ignored, 0, label), axis=-1)
    match = np.where(ignored, 1, match)  # log(1) = 0 for ignored rows
    return {"Y": -np.log(match), "MatchX": match, "XShape": np.zeros((0,) + x.shape, dtype=x.dtype)}


@kernel("cross_entropy_grad2")
def cross_entropy_grad2(k):
    label, match, dy = k.x("Label").astype(np.int64), k.x("MatchX"), k.x("Y@GRAD")
    shape = tuple(k.x("XShape").shape[1:])
    ignored = label == k.attr("ignore_index")
    dx = np.zeros(shape, dtype=match.dtype)
    np.put_along_axis(dx, np.where(ignored, 0, label), np.where(ignored, 0, -dy / match), axis=-1)
    return {"X@GRAD": dx}


def _sigmoid_ce_terms(k):
    """Per-element kept mask and the 1/norm scale of sigmoid_cross_entropy_with_logits."""
    label = k.x("Label")
    kept = label.astype(np.int64) != k.attr("ignore_index")  # Paddle compares the truncated label
    if not k.attr("normalize"):
        return kept, 1.0
    counted = np.abs(label - k.attr("ignore_index")) > 1e-6
    return kept, 1.0 / max(int(counted.sum()), 1)


@kernel("sigmoid_cross_entropy_with_logits")
def sigmoid_cross_entropy_with_logits(k):
    """(1 - label) * x + w * log(1 + exp(-x)), w = pos_weight or 1: the logistic loss when w = 1."""
    x, label = k.x("X"), k.x("Label")
    weight = k.x("pos_weight") if k.has("pos_weight") else 1
    kept, scale = _sigmoid_ce_terms(k)
    out = (1 - label) * x + weight * np.logaddexp(0, -x)
    return {"Out": np.where(kept, out * scale, 0)}


@kernel("sigmoid_cross_entropy_with_logits_grad")
def sigmoid_cross_entropy_with_logits_grad(k):
    x, label, dout = k.x("X"), k.x("Label"), k.x("Out@GRAD")
    weight = k.x("pos_weight") if k.has("pos_weight") else 1
    kept, scale = _sigmoid_ce_terms(k)
    return {"X@GRAD": np.where(kept, ((1 - label) + weight * (sigmoid(x) - 1)) * dout * scale, 0)}


@kernel("bce_loss")
def bce_loss(k):
    x, label = k.x("X"), k.x("Label")
    log_x, log_1mx = np.maximum(np.log(x), -100), np.maximum(np.log(1 - x), -100)  # Paddle clamps at -100
    return {"Out": -(label * log_x + (1 - label) * log_1mx)}


@kernel("bce_loss_grad")
def bce_loss_grad(k):
    x, label, dout = k.x("X"), k.x("Label"), k.x("Out@GRAD")
    return {"X@GRAD": dout * (x - label) / np.maximum((1 - x) * x, 1e-12)}


def _huber_slope(residual, delta):
    """d(huber)/d(residual): quadratic inside |r| <= delta, linear outside."""
    return np.where(np.abs(residual) <= delta, residual, delta * np.sign(residual))


@kernel("huber_loss")
def huber_loss(k):
    residual, delta = k.x("Y") - k.x("X"), k.attr("delta")
    small = np.abs(residual) <= delta
    out = np.where(small, 0.5 * residual * residual, delta * (np.abs(residual) - 0.5 * delta))
    return {"Out": out, "Residual": residual}


@kernel("huber_loss_grad")
def huber_loss_grad(k):
    slope = _huber_slope(k.x("Residual"), k.attr("delta")) * k.x("Out@GRAD")
    return k.grads({"X@GRAD": lambda: -slope, "Y@GRAD": lambda: slope})


def _kldiv_scale(k, x):
    """What the reduction divides the summed loss by."""
    return {"mean": x.size, "batchmean": x.shape[0] if x.ndim else 1}.get(k.attr("reduction"), 1)


@kernel("kldiv_loss")
def kldiv_loss(k):
    """X holds log-probabilities; Target probabilities (log-probabilities with log_target)."""
    x, target = k.x("X"), k.x("Target")
    if k.attr("log_target"):
        loss = np.exp(target) * (target - x)
    else:
        positive = target > 0
        loss = np.where(positive, target * (np.log(np.where(positive, target, 1)) - x), 0)
    if k.attr("reduction") == "none":
        return {"Loss": loss}
    return {"Loss": np.asarray(loss.sum() / _kldiv_scale(k, x), loss.dtype)}


@kernel("kldiv_loss_grad")
def kldiv_loss_grad(k):
    x, target, dloss = k.x("X"), k.x("Target"), k.x("Loss@GRAD")
    weight = np.exp(target) if k.attr("log_target") else np.maximum(target, 0)
    return {"X@GRAD": -weight * dloss / _kldiv_scale(k, x)}
