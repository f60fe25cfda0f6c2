"""Kernels of gradc.ops.hsigmoid, vectorised over the batch and the path steps."""

from __future__ import annotations

import numpy as np

from ..selected_rows import selected
from . import kernel
from .activation import sigmoid

CLIP = 40.0  # Paddle clips each step's logit to [-40, 40]


def _paths(k):
    """Per sample and step: the tree node (0 past the path's end), the branch bit, and whether the step is
    on the path. The default tree numbers class c as c + num_classes: its nodes are the prefixes of that
    code, its branches the bits below them."""
    if k.has("PathTable") != k.has("PathCode"):
        raise ValueError("a custom tree needs both PathTable and PathCode")
    if k.has("PathTable"):
        table, code = k.x("PathTable").astype(np.int64), k.x("PathCode").astype(np.int64)
        on_path = np.cumprod(table >= 0, axis=1).astype(bool)  # a path ends at its first negative node
        return np.where(on_path, table, 0), np.where(on_path, code, 0), on_path
    classes, label = k.attr("num_classes"), k.x("Label").reshape(-1).astype(np.int64)
    if label.min(initial=0) < 0 or label.max(initial=0) >= classes:
        raise ValueError(f"Label holds {label[(label < 0) | (label >= classes)][0]}: a label must be in "
                         f"[0, num_classes={classes})")
    steps = int(classes - 1).bit_length()
    code = (label + classes)[:, None]
    bit = np.arange(steps)
    on_path = bit < np.array([int(c).bit_length() - 1 for c in code[:, 0]])[:, None]
    node = np.where(on_path, (code >> (bit + 1)) - 1, 0)
    return node, np.where(on_path, (code >> bit) & 1, 0), on_path


def _logits(k, node, on_path):
    """Each step's logit x . W[node] + bias[node] (0 off the path), unclipped."""
    x, w = k.x("X"), k.x("W")
    z = np.einsum("nd,nsd->ns", x, w[node])
    if k.has("Bias"):
        z = z + k.x("Bias").reshape(-1)[node]
    return np.where(on_path, z, 0).astype(x.dtype, copy=False)


@kernel("hierarchical_sigmoid")
def hierarchical_sigmoid(k):
    """Out = sum over steps of softplus(z) - bit * z. Like Paddle, steps past a short path count
    softplus(0) = log 2 each (a constant: it changes no gradient)."""
    node, bit, on_path = _paths(k)
    z = np.clip(_logits(k, node, on_path), -CLIP, CLIP)
    pre_out = np.logaddexp(0, z).astype(z.dtype, copy=False)
    out = pre_out.sum(axis=1, keepdims=True) - (bit.astype(z.dtype) * z).sum(axis=1, keepdims=True)
    return {"Out": out, "PreOut": pre_out}


@kernel("hierarchical_sigmoid_grad")
def hierarchical_sigmoid_grad(k):
    """d Out / d z = sigmoid(z) - bit on the path, 0 where the clip holds z (Paddle ignores the clip)."""
    x, w = k.x("X"), k.x("W")
    node, bit, on_path = _paths(k)
    z = _logits(k, node, on_path)
    dz = np.where(on_path & (np.abs(z) < CLIP), sigmoid(z) - bit.astype(z.dtype), 0) * k.x("Out@GRAD").reshape(-1, 1)

    def scatter(values, like):
        total = np.zeros((like.shape[0],) + values.shape[2:], like.dtype)
        np.add.at(total, node[on_path], values[on_path])
        return total.reshape(like.shape)

    def dw():
        grad = scatter(dz[:, :, None] * x[:, None, :], w)
        return selected(grad, node[on_path]) if k.attr("is_sparse") else grad

    return k.grads({"X@GRAD": lambda: np.einsum("ns,nsd->nd", dz, w[node]),
                    "W@GRAD": dw,
                    "Bias@GRAD": lambda: scatter(dz, k.x("Bias"))})
