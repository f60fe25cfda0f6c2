"""Kernels of gradc.ops.double_grad_unary: grad_out@GRAD = f'(X) ddX, X@GRAD = f''(X) dOut ddX."""

from __future__ import annotations

import functools

import numpy as np

from . import kernel
from .activation import sigmoid
from .math import _clip_grad, _factor


def _double(name: str, derivatives, x: str = "X") -> None:
    """derivatives(x, k) -> (f'(x), f''(x)), computed once per run and only when an output is wanted; ``x``: the
    slot of X (acos_double_grad's is lower-case)."""

    def run(k):
        both = functools.cache(lambda: derivatives(k.x(x), k))
        return k.grads({"grad_out@GRAD": lambda: both()[0] * k.x("grad_x@GRAD"),
                        f"{x}@GRAD": lambda: both()[1] * k.x("grad_out") * k.x("grad_x@GRAD")})

    kernel(name)(run)


def _softplus(x, k):
    """softplus' = sigmoid(beta x) and softplus'' = beta s (1 - s) up to the threshold of beta x; 1 and 0 past it."""
    beta, linear = k.attr("beta"), k.attr("beta") * x > k.attr("threshold")
    s = sigmoid(beta * x)
    return np.where(linear, 1.0, s), np.where(linear, 0.0, beta * s * (1 - s))


def _elu(x, k):
    negative = k.attr("alpha") * np.exp(np.minimum(x, 0))
    return np.where(x > 0, 1.0, negative), np.where(x > 0, 0.0, negative)


def _celu(x, k):
    negative = np.exp(np.minimum(x, 0) / k.attr("alpha"))
    return np.where(x > 0, 1.0, negative), np.where(x > 0, 0.0, negative / k.attr("alpha"))


def _pow(x, k):
    factor = _factor(k)
    return factor * np.power(x, factor - 1), factor * (factor - 1) * np.power(x, factor - 2)


def _sin(x, k):
    return np.cos(x), -np.sin(x)


def _cos(x, k):
    return -np.sin(x), -np.cos(x)


_double("sin_double_grad", _sin)
_double("cos_double_grad", _cos)
_double("square_grad_grad", lambda x, k: (2 * x, np.full_like(x, 2)))
_double("log_grad_grad", lambda x, k: (1 / x, -1 / (x * x)))
_double("softplus_double_grad", _softplus)
_double("elu_grad_grad", _elu)
_double("celu_grad_grad", _celu)
_double("pow_double_grad", _pow)
_double("acos_double_grad", lambda x, k: (-1 / np.sqrt(1 - x * x), -x / (1 - x * x) ** 1.5), x="x")


def _by_out(name: str, first_grad, scale: float) -> None:
    """grad_out@GRAD = first_grad(Out) ddX; Out@GRAD = scale dX ddX / Out (sqrt: -1, rsqrt: 3)."""

    def run(k):
        out, ddx = k.x("Out"), k.x("grad_x@GRAD")
        return k.grads({"grad_out@GRAD": lambda: first_grad(out) * ddx,
                        "Out@GRAD": lambda: scale * k.x("grad_x") * ddx / out})

    kernel(name)(run)


def _flat(name: str, slope) -> None:
    """Piecewise linear: grad_out@GRAD = slope(X, k) ddX."""
    kernel(name)(lambda k: k.grads({"grad_out@GRAD": lambda: slope(k.x("X"), k) * k.x("grad_x@GRAD")}))


_by_out("sqrt_grad_grad", lambda out: 0.5 / out, -1.0)
_by_out("rsqrt_grad_grad", lambda out: -0.5 * out ** 3, 3.0)
_flat("leaky_relu_grad_grad", lambda x, k: np.where(x > 0, 1.0, k.attr("alpha")))   # alpha at 0, as Paddle's
_flat("abs_double_grad", lambda x, k: np.sign(x))
_flat("clip_double_grad", lambda x, k: _clip_grad(x, 1.0, k))   # bounds included, as clip_grad
