"""Kernels of gradc.ops.triple_grad_unary: of new = f''(v) dOut ddX and ddOut = f'(v) ddX at their grads d_new and
d_ddOut (an absent one is zero), v@GRAD = f'''(v) dOut ddX d_new + f''(v) ddX d_ddOut, dOut@GRAD = f''(v) ddX d_new,
ddX@GRAD = f''(v) dOut d_new + f'(v) d_ddOut."""

from __future__ import annotations

import functools

import numpy as np

from ...ops.triple_grad_unary import TRIPLE
from . import kernel
from .double_grad_unary import _cos, _pow, _sin
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


def _and(second, third):
    """derivatives(v, k) -> (f'(v), f''(v), f'''(v)) from second's (f', f'') and third's f'''."""
    return lambda value, k: (*second(value, k), third(value, k))


def _third_of_pow(x, k):
    factor = _factor(k)
    return factor * (factor - 1) * (factor - 2) * np.power(x, factor - 3)


_DERIVATIVES = {"sin_triple_grad": _and(_sin, lambda x, k: -np.cos(x)),
                "cos_triple_grad": _and(_cos, lambda x, k: np.sin(x)),
                # in sigmoid's Out: f' = out (1 - out), and the double grad's Out@GRAD is (1 - 2 out) dOut ddX
                "sigmoid_triple_grad": lambda out, k: (out * (1 - out), 1 - 2 * out, np.full_like(out, -2.0)),
                "pow_triple_grad": _and(_pow, _third_of_pow)}

for _type, _entry in TRIPLE.items():
    _inputs, _outputs = _entry[2]   # the op's slots, "?" marking the optional
    _triple(_type, tuple(slot.rstrip("?") for slot in _inputs), _outputs, _DERIVATIVES[_type])
