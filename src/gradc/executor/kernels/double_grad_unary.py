"""Kernels of gradc.ops.double_grad_unary: grad_out@GRAD = f'(X) ddX, X@GRAD = f''(X) dOut ddX."""

from __future__ import annotations

import numpy as np

from . import kernel


def _unary(name: str, slope, curvature) -> None:
    kernel(name)(lambda k: k.grads({
        "grad_out@GRAD": lambda: slope(k.x("X")) * k.x("grad_x@GRAD"),
        "X@GRAD": lambda: curvature(k.x("X")) * k.x("grad_out") * k.x("grad_x@GRAD")}))


_unary("sin_double_grad", np.cos, lambda x: -np.sin(x))
_unary("cos_double_grad", lambda x: -np.sin(x), lambda x: -np.cos(x))
_unary("square_grad_grad", lambda x: 2 * x, lambda x: np.full_like(x, 2))
_unary("log_grad_grad", lambda x: 1 / x, lambda x: -1 / (x * x))
