"""Kernels of gradc.ops.loss."""

from __future__ import annotations

import numpy as np

from . import kernel


def _class_axis(k, x):
    return k.attr("axis") % x.ndim


def _index(label, like, axis):
    """Integer labels shaped like ``like`` with the class axis of size 1."""
    index = label.astype(np.int64)
    return np.expand_dims(index, axis) if index.ndim == like.ndim - 1 else index


@kernel("softmax_with_cross_entropy")
def softmax_with_cross_entropy(k):
    logits, label = k.x("Logits"), k.x("Label")
    axis = _class_axis(k, logits)
    if k.attr("use_softmax"):
        shifted = logits - logits.max(axis=axis, keepdims=True)
        log_prob = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
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
    if k.attr("use_softmax"):
        return {"Logits@GRAD": (softmax - target) * dloss}
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

