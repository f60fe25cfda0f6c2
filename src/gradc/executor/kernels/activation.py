"""Kernels of gradc.ops.activation: one row per op, forward and grad side by side."""

from __future__ import annotations

import numpy as np

from . import kernel


def unary(name: str, forward, backward, uses: str = "X") -> None:
    """forward(x, k) -> out; backward(v, dout, k) -> dx, where v is the slot named by ``uses``."""
    kernel(name)(lambda k: {"Out": forward(k.x("X"), k)})
    kernel(name + "_grad")(lambda k: {"X@GRAD": backward(k.x(uses), k.x("Out@GRAD"), k)})


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _sigmoid(x):
    return 0.5 * (np.tanh(0.5 * x) + 1)  # overflow-free logistic


unary("relu", lambda x, k: np.maximum(x, 0), lambda out, d, k: d * (out > 0), uses="Out")
unary("sigmoid", lambda x, k: _sigmoid(x), lambda out, d, k: d * out * (1 - out), uses="Out")
unary("tanh", lambda x, k: np.tanh(x), lambda out, d, k: d * (1 - out * out), uses="Out")
unary("softmax", lambda x, k: _softmax(x, k.attr("axis")),
      lambda out, d, k: out * (d - (d * out).sum(axis=k.attr("axis"), keepdims=True)), uses="Out")
