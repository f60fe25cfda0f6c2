"""Kernels of gradc.ops.loss."""

from __future__ import annotations

import numpy as np

from ...shapes import normalize_axis
from . import kernel
from .activation import SHIFT_FLOOR, log_softmax, sigmoid


def _class_axis(k, x):
    return normalize_axis(k.attr("axis"), x.ndim)


def class_index(k, like, axis: int):
    """The integer labels of slot Label as indices into ``like`` along ``axis`` (a label without the class
    axis gets one of size 1), class 0 where the label is ignore_index; and the mask of ignored labels. A
    label outside [0, classes) that is not ignored is an error, as in Paddle."""
    index = k.x("Label").astype(np.int64)
    if index.ndim == like.ndim - 1:
        index = np.expand_dims(index, axis)
    ignored = index == k.attr("ignore_index")
    classes = like.shape[axis]
    wrong = ~ignored & ((index < 0) | (index >= classes))
    if wrong.any():
        raise ValueError(f"Label holds {index[wrong][0]}: a label must be in [0, {classes}) "
                         f"or ignore_index ({k.attr('ignore_index')})")
    return np.where(ignored, 0, index), ignored


@kernel("softmax_with_cross_entropy")
def softmax_with_cross_entropy(k):
    logits, label = k.x("Logits"), k.x("Label")
    axis = _class_axis(k, logits)
    if k.attr("use_softmax"):
        log_prob = log_softmax(logits, axis, SHIFT_FLOOR)
        softmax = np.exp(log_prob)
    else:
        softmax = logits
        log_prob = np.log(logits)
    if k.attr("soft_label"):
        loss = -(label * log_prob).sum(axis=axis, keepdims=True)
    else:
        index, ignored = class_index(k, logits, axis)
        loss = np.where(ignored, 0, -np.take_along_axis(log_prob, index, axis=axis))
    return {"Softmax": softmax, "Loss": loss}


@kernel("softmax_with_cross_entropy_grad")
def softmax_with_cross_entropy_grad(k):
    softmax, label, dloss = k.x("Softmax"), k.x("Label"), k.x("Loss@GRAD")
    axis = _class_axis(k, softmax)
    if k.attr("soft_label"):
        target = label
    else:
        index, ignored = class_index(k, softmax, axis)
        target = np.zeros_like(softmax)
        np.put_along_axis(target, index, 1, axis=axis)
        dloss = np.where(ignored, 0, dloss)
    if k.attr("use_softmax"):  # the grad of -sum(target * log_softmax), also for soft labels not summing to 1
        return {"Logits@GRAD": (softmax * target.sum(axis=axis, keepdims=True) - target) * dloss}
    return {"Logits@GRAD": -target / softmax * dloss}


def _tolerable_log(x):
    """log, with log(0) = -inf capped at -1e20 as Paddle does."""
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(x), -1e20)


@kernel("cross_entropy2")
def cross_entropy2(k):
    """Y = -log(X at the label), in the label's shape; 0 (and MatchX 0) where the label is ignored."""
    x, label = k.x("X"), k.x("Label")
    index, ignored = class_index(k, x, -1)
    match = np.where(ignored, 0, np.take_along_axis(x, index, axis=-1))
    y = np.where(ignored, 0, -_tolerable_log(np.where(ignored, 1, match)))
    return {"Y": y.reshape(label.shape), "MatchX": match, "XShape": np.zeros(x.shape + (0,), dtype=x.dtype)}


@kernel("cross_entropy_grad2")
def cross_entropy_grad2(k):
    match, dy = k.x("MatchX"), k.x("Y@GRAD")
    dx = np.zeros(k.x("XShape").shape[:-1], dtype=match.dtype)
    index, ignored = class_index(k, dx, -1)
    dy = dy.reshape(match.shape)
    np.put_along_axis(dx, index, np.where(ignored, 0, -dy / np.where(ignored, 1, match)), axis=-1)
    return {"X@GRAD": dx}


@kernel("cross_entropy")
def cross_entropy(k):
    x, label = k.x("X"), k.x("Label")
    if k.attr("soft_label"):
        return {"Y": -(label * _tolerable_log(x)).sum(axis=-1, keepdims=True)}
    index, ignored = class_index(k, x, -1)
    picked = np.take_along_axis(x, index, axis=-1)
    return {"Y": np.where(ignored, 0, -_tolerable_log(np.where(ignored, 1, picked))).reshape(label.shape)}


@kernel("cross_entropy_grad")
def cross_entropy_grad(k):
    x, label, dy = k.x("X"), k.x("Label"), k.x("Y@GRAD")
    dy = dy.reshape(x.shape[:-1] + (1,))
    if k.attr("soft_label"):
        return {"X@GRAD": -label * dy / x}
    index, ignored = class_index(k, x, -1)
    dx = np.zeros_like(x)
    np.put_along_axis(dx, index, np.where(ignored, 0, -dy / np.take_along_axis(x, index, axis=-1)), axis=-1)
    return {"X@GRAD": dx}


def _nll_terms(k):
    """X, the label indices along the class axis 1, and each label's weight (0 where ignored)."""
    x, weight = k.x("X"), k.optional("Weight")
    index, ignored = class_index(k, x, 1)
    picked_weight = weight[index] if weight is not None else np.ones(index.shape, x.dtype)
    return x, index, np.where(ignored, 0, picked_weight).astype(x.dtype, copy=False)


def _nll_divisor(k, total):
    """What the reduced loss (and its grad) is divided by: the total weight for "mean" (when not 0)."""
    return total if k.attr("reduction") == "mean" and total != 0 else 1


@kernel("nll_loss")
def nll_loss(k):
    x, index, weight = _nll_terms(k)
    loss = -np.take_along_axis(x, index, axis=1) * weight
    if k.attr("reduction") == "none":  # Paddle leaves Total_weight at 0 here
        return {"Out": loss.squeeze(1), "Total_weight": np.zeros((), x.dtype)}
    total = weight.sum(dtype=x.dtype)
    return {"Out": np.asarray(loss.sum() / _nll_divisor(k, total), x.dtype), "Total_weight": total}


@kernel("nll_loss_grad")
def nll_loss_grad(k):
    x, index, weight = _nll_terms(k)
    dout = k.x("Out@GRAD")
    if k.attr("reduction") == "none":
        dout = np.expand_dims(dout, 1)
    else:
        dout = dout / _nll_divisor(k, k.x("Total_weight"))
    dx = np.zeros_like(x)
    np.put_along_axis(dx, index, -weight * dout, axis=1)
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


@kernel("log_loss")
def log_loss(k):
    p, labels, eps = k.x("Predicted"), k.x("Labels"), k.attr("epsilon")
    return {"Loss": -labels * np.log(p + eps) - (1 - labels) * np.log(1 - p + eps)}


@kernel("log_loss_grad")
def log_loss_grad(k):
    p, labels, eps = k.x("Predicted"), k.x("Labels"), k.attr("epsilon")
    return {"Predicted@GRAD": k.x("Loss@GRAD") * ((1 - labels) / (1 - p + eps) - labels / (p + eps))}


_IDENTITY_LOSS_REDUCE = {0: np.sum, 1: np.mean}  # 2: none


@kernel("identity_loss")
def identity_loss(k):
    x, reduce = k.x("X"), _IDENTITY_LOSS_REDUCE.get(k.attr("reduction"))
    return {"Out": x if reduce is None else np.asarray(reduce(x), x.dtype)}


@kernel("identity_loss_grad")
def identity_loss_grad(k):
    x, dout = k.x("X"), k.x("Out@GRAD")
    scale = 1 / x.size if k.attr("reduction") == 1 else 1
    return {"X@GRAD": np.broadcast_to(dout * scale, x.shape).astype(x.dtype)}
