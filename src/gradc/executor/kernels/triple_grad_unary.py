"""Kernels of gradc.ops.triple_grad_unary: of new = f''(v) dOut ddX and ddOut = f'(v) ddX at their grads d_new and
d_ddOut (an absent one is zero), v@GRAD = f'''(v) dOut ddX d_new + f''(v) ddX d_ddOut, dOut@GRAD = f''(v) ddX d_new,
ddX@GRAD = f''(v) dOut d_new + f'(v) d_ddOut."""

from __future__ import annotations

import functools

import numpy as np

from . import kernel
from .math import _factor


def _triple(name: str, inputs: tuple[str, ...], outputs: tuple[str, ...], derivatives) -> None:
    """derivatives(v, k) -> (f'(v), f''(v), f'''(v)), computed once per run and only when an output is wanted."""

    def run(k):
        value, dout, ddx = (k.x(slot) for slot in inputs[:3])
        d_new, d_ddout = (k.optional(slot) for slot in inputs[3:])
        d_new, d_ddout = (np.zeros_like(value) if d is None else d for d in (d_new, d_ddout))
        slopes = functools.cache(lambda: derivatives(value, k))
        return k.grads({outputs[0]: lambda: slopes()[2] * dout * ddx * d_new + slopes()[1] * ddx * d_ddout,
                        outputs[1]: lambda: slopes()[1] * ddx * d_new,
                        outputs[2]: lambda: slopes()[1] * dout * d_new + slopes()[0] * d_ddout})

    kernel(name)(run)


def _pow(x, k):
    factor = _factor(k)
    return (factor * np.power(x, factor - 1), factor * (factor - 1) * np.power(x, factor - 2),
            factor * (factor - 1) * (factor - 2) * np.power(x, factor - 3))


_SIN_SLOTS = (("X", "grad_out_forward", "grad_x_grad_forward", "grad_x@GRAD", "grad_out_grad@GRAD"),
              ("X@GRAD", "grad_out_forward@GRAD", "grad_x_grad_forward@GRAD"))
_triple("sin_triple_grad", *_SIN_SLOTS, lambda x, k: (np.cos(x), -np.sin(x), -np.cos(x)))
_triple("cos_triple_grad", *_SIN_SLOTS, lambda x, k: (-np.sin(x), -np.cos(x), np.sin(x)))
# in sigmoid's Out: f' = out (1 - out), and the double grad's Out@GRAD is (1 - 2 out) dOut ddX
_triple("sigmoid_triple_grad", ("Out", "fwd_grad_out", "grad_grad_x", "grad_out@GRAD", "grad_grad_out@GRAD"),
        ("Out@GRAD", "fwd_grad_out@GRAD", "grad_grad_x@GRAD"),
        lambda out, k: (out * (1 - out), 1 - 2 * out, np.full_like(out, -2.0)))
_triple("pow_triple_grad", ("X", "grad_out", "grad_grad_x", "grad_x@GRAD", "grad_grad_out@GRAD"),
        ("X@GRAD", "grad_out@GRAD", "grad_grad_x@GRAD"), _pow)
