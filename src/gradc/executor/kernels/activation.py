"""Kernels of gradc.ops.activation: one row per op, forward and grad side by side."""

from __future__ import annotations

import math

import numpy as np

from . import kernel


def unary(name: str, forward, backward, uses: str = "X") -> None:
    """forward(x, k) -> out; backward(v, dout, k) -> dx, where v is the slot named by ``uses``."""
    kernel(name)(lambda k: {"Out": forward(k.x("X"), k)})
    kernel(name + "_grad")(lambda k: {"X@GRAD": backward(k.x(uses), k.x("Out@GRAD"), k)})


def sigmoid(x):
    return 0.5 * (np.tanh(0.5 * x) + 1)  # overflow-free logistic


def erf(x):
    """erf to ~2e-15 with numpy only: exp(-z^2) times a series of positive terms (no cancellation),
    computed in float64 and returned in x's dtype; |z| is capped at 6, where erf is +-1 in doubles."""
    z = np.clip(np.asarray(x, dtype=np.float64), -6.0, 6.0)
    z2 = 2 * z * z
    term, total = z.copy(), z.copy()
    for n in range(1, int(z2.max(initial=0.0)) + 40):  # terms shrink once 2n+1 > 2z^2
        term *= z2 / (2 * n + 1)
        total += term
    return (2 / math.sqrt(math.pi) * np.exp(-z * z) * total).astype(np.result_type(x, np.float32), copy=False)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


_TANH_C = math.sqrt(2 / math.pi)  # tanh-approximate gelu: 0.5 x (1 + tanh(c (x + 0.044715 x^3)))


def _gelu(x, approximate):
    if approximate:
        return 0.5 * x * (1 + np.tanh(_TANH_C * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def _gelu_grad(x, d, approximate):
    if approximate:
        t = np.tanh(_TANH_C * (x + 0.044715 * x ** 3))
        return d * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _TANH_C * (1 + 3 * 0.044715 * x * x))
    return d * (0.5 * (1 + erf(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi))


def _softplus(x, beta, threshold):
    bx = beta * x
    return np.where(bx > threshold, x, np.logaddexp(0, bx) / beta)


def _hard_swish(x, k):
    return x * np.clip(x + k.attr("offset"), 0, k.attr("threshold")) / k.attr("scale")


def _hard_swish_grad(x, d, k):
    shifted, threshold, scale = x + k.attr("offset"), k.attr("threshold"), k.attr("scale")
    slope = np.where(shifted < threshold, (x + shifted) / scale, threshold / scale)
    return d * (shifted > 0) * slope


kernel("relu")(lambda k: {"Out": np.maximum(k.x("X"), 0)})   # unary's pair, one call less: hot in MLPs
kernel("relu_grad")(lambda k: {"X@GRAD": k.x("Out@GRAD") * (k.x("Out") > 0)})
kernel("relu_grad_grad")(lambda k: {"grad_out@GRAD": k.x("grad_x@GRAD") * (k.x("Out") > 0)})
unary("sigmoid", lambda x, k: sigmoid(x), lambda out, d, k: d * out * (1 - out), uses="Out")
unary("tanh", lambda x, k: np.tanh(x), lambda out, d, k: d * (1 - out * out), uses="Out")
unary("softmax", lambda x, k: softmax(x, k.attr("axis")),
      lambda out, d, k: out * (d - (d * out).sum(axis=k.attr("axis"), keepdims=True)), uses="Out")
unary("log_softmax", lambda x, k: log_softmax(x, k.attr("axis")),
      lambda out, d, k: d - np.exp(out) * d.sum(axis=k.attr("axis"), keepdims=True), uses="Out")
unary("gelu", lambda x, k: _gelu(x, k.attr("approximate")), lambda x, d, k: _gelu_grad(x, d, k.attr("approximate")))
unary("leaky_relu", lambda x, k: np.where(x > 0, x, k.attr("alpha") * x),
      lambda x, d, k: np.where(x > 0, d, k.attr("alpha") * d))
unary("elu", lambda x, k: np.where(x > 0, x, k.attr("alpha") * np.expm1(np.minimum(x, 0))),
      lambda x, d, k: np.where(x > 0, d, d * (k.x("Out") + k.attr("alpha"))))
unary("silu", lambda x, k: x * sigmoid(x), lambda x, d, k: d * sigmoid(x) * (1 + x * (1 - sigmoid(x))))


def _swish_grad(x, d, k):
    beta = k.attr("beta")
    s = sigmoid(beta * x)
    return d * s * (1 + beta * x * (1 - s))


unary("swish", lambda x, k: x * sigmoid(k.attr("beta") * x), _swish_grad)
unary("softplus", lambda x, k: _softplus(x, k.attr("beta"), k.attr("threshold")),
      lambda x, d, k: np.where(k.attr("beta") * x > k.attr("threshold"), d, d * sigmoid(k.attr("beta") * x)))
unary("hard_sigmoid", lambda x, k: np.clip(k.attr("slope") * x + k.attr("offset"), 0, 1),
      lambda out, d, k: d * k.attr("slope") * ((out > 0) & (out < 1)), uses="Out")
unary("hard_swish", _hard_swish, _hard_swish_grad)
unary("softsign", lambda x, k: x / (1 + np.abs(x)), lambda x, d, k: d / (1 + np.abs(x)) ** 2)
unary("relu6", lambda x, k: np.minimum(np.maximum(x, 0), k.attr("threshold")),
      lambda out, d, k: d * ((out > 0) & (out < k.attr("threshold"))), uses="Out")


def _within(x, k, low: str, high: str):
    return (x > k.attr(low)) & (x < k.attr(high))


unary("brelu", lambda x, k: np.minimum(np.maximum(x, k.attr("t_min")), k.attr("t_max")),
      lambda x, d, k: d * _within(x, k, "t_min", "t_max"))
# celu: x for x > 0, alpha (exp(x / alpha) - 1) otherwise (either sign of alpha)
unary("celu", lambda x, k: np.where(x > 0, x, k.attr("alpha") * np.expm1(np.minimum(x, 0) / k.attr("alpha"))),
      lambda x, d, k: np.where(x > 0, d, d * np.exp(np.minimum(x, 0) / k.attr("alpha"))))
unary("hard_shrink", lambda x, k: np.where(np.abs(x) > k.attr("threshold"), x, 0),
      lambda x, d, k: d * (np.abs(x) > k.attr("threshold")))
unary("logsigmoid", lambda x, k: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))), lambda x, d, k: d * sigmoid(-x))


def _mish_softplus(x, k):
    return np.where(x > k.attr("threshold"), x, np.logaddexp(0, x))


def _mish_grad(x, d, k):
    t = np.tanh(_mish_softplus(x, k))
    return d * (t + x * (1 - t * t) * np.where(x > k.attr("threshold"), 1, sigmoid(x)))


unary("mish", lambda x, k: x * np.tanh(_mish_softplus(x, k)), _mish_grad)
unary("selu", lambda x, k: k.attr("scale") * np.where(x > 0, x, k.attr("alpha") * np.expm1(np.minimum(x, 0))),
      lambda out, d, k: np.where(out > 0, d * k.attr("scale"), d * (out + k.attr("scale") * k.attr("alpha"))),
      uses="Out")


def _softshrink(x, k):
    shift = k.attr("lambda")
    return np.where(x > shift, x - shift, np.where(x < -shift, x + shift, 0))


unary("softshrink", _softshrink, lambda x, d, k: d * (np.abs(x) > k.attr("lambda")))
unary("tanh_shrink", lambda x, k: x - np.tanh(x), lambda x, d, k: d * np.tanh(x) ** 2)
unary("thresholded_relu", lambda x, k: np.where(x > k.attr("threshold"), x, k.attr("value")),
      lambda x, d, k: d * (x > k.attr("threshold")))
