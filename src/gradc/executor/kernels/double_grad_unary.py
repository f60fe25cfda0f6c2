"""Kernels of gradc.ops.double_grad_unary: grad_out@GRAD = f'(X) ddX, X@GRAD = f''(X) dOut ddX."""

from __future__ import annotations

import numpy as np

from . import kernel
from .activation import sigmoid


def _unary(name: str, slope, curvature) -> None:
    kernel(name)(lambda k: k.grads({
        "grad_out@GRAD": lambda: slope(k.x("X")) * k.x("grad_x@GRAD"),
        "X@GRAD": lambda: curvature(k.x("X")) * k.x("grad_out") * k.x("grad_x@GRAD")}))


_unary("sin_double_grad", np.cos, lambda x: -np.sin(x))
_unary("cos_double_grad", lambda x: -np.sin(x), lambda x: -np.cos(x))
_unary("square_grad_grad", lambda x: 2 * x, lambda x: np.full_like(x, 2))
_unary("log_grad_grad", lambda x: 1 / x, lambda x: -1 / (x * x))


def _attributed(name: str, slope, curvature) -> None:
    """As _unary, for ops whose derivatives read their attributes: slope(x, k), curvature(x, k)."""
    kernel(name)(lambda k: k.grads({
        "grad_out@GRAD": lambda: slope(k.x("X"), k) * k.x("grad_x@GRAD"),
        "X@GRAD": lambda: curvature(k.x("X"), k) * k.x("grad_out") * k.x("grad_x@GRAD")}))


def _softplus_slopes(x, k):
    """softplus' = sigmoid(beta x) and softplus'' = beta s (1 - s) up to the threshold of beta x; 1 and 0 past it."""
    beta, linear = k.attr("beta"), k.attr("beta") * x > k.attr("threshold")
    s = sigmoid(beta * x)
    return np.where(linear, 1.0, s), np.where(linear, 0.0, beta * s * (1 - s))


def _pow_factor(k) -> float:
    factor = k.optional("FactorTensor")
    return float(factor.reshape(-1)[0]) if factor is not None else k.attr("factor")


_attributed("softplus_double_grad", lambda x, k: _softplus_slopes(x, k)[0], lambda x, k: _softplus_slopes(x, k)[1])
_attributed("elu_grad_grad", lambda x, k: np.where(x > 0, 1.0, k.attr("alpha") * np.exp(np.minimum(x, 0))),
            lambda x, k: np.where(x > 0, 0.0, k.attr("alpha") * np.exp(np.minimum(x, 0))))
_attributed("celu_grad_grad", lambda x, k: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0) / k.attr("alpha"))),
            lambda x, k: np.where(x > 0, 0.0, np.exp(np.minimum(x, 0) / k.attr("alpha")) / k.attr("alpha")))
_attributed("pow_double_grad", lambda x, k: _pow_factor(k) * np.power(x, _pow_factor(k) - 1),
            lambda x, k: _pow_factor(k) * (_pow_factor(k) - 1) * np.power(x, _pow_factor(k) - 2))
