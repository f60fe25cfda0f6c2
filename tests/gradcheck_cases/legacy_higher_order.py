"""Cases for Paddle's last legacy higher-order op types gradc lacked: the third-derivative ops of unary math
(gradc.ops.triple_grad_unary), each with and without one of its two cotangents, and acos_double_grad."""

import numpy as np

from . import Case, rng

r = rng(47)


def _triple(type: str, value, slots: tuple[str, ...], attrs=None, dropped: str | None = None, more=None):
    inputs = {slot: value if i == 0 else r.standard_normal(value.shape) for i, slot in enumerate(slots)
              if slot != dropped}
    return Case(type, {**inputs, **(more or {})}, attrs or {}, wrt=[s for s in slots if s != dropped])


_SIN = ("X", "grad_out_forward", "grad_x_grad_forward", "grad_x@GRAD", "grad_out_grad@GRAD")
_SIGMOID = ("Out", "fwd_grad_out", "grad_grad_x", "grad_out@GRAD", "grad_grad_out@GRAD")
_POW = ("X", "grad_out", "grad_grad_x", "grad_x@GRAD", "grad_grad_out@GRAD")

CASES = [
    _triple("sin_triple_grad", r.standard_normal((3, 4)), _SIN),
    _triple("sin_triple_grad", r.standard_normal((2, 3)), _SIN, dropped="grad_out_grad@GRAD"),
    _triple("cos_triple_grad", r.standard_normal((3, 4)), _SIN),
    _triple("cos_triple_grad", r.standard_normal((2, 3)), _SIN, dropped="grad_x@GRAD"),
    _triple("sigmoid_triple_grad", 1 / (1 + np.exp(-r.standard_normal((3, 4)))), _SIGMOID),
    _triple("sigmoid_triple_grad", 1 / (1 + np.exp(-r.standard_normal((2, 3)))), _SIGMOID, dropped="grad_out@GRAD"),
    _triple("pow_triple_grad", r.uniform(0.5, 2.0, (3, 4)), _POW, {"factor": 3.5}),
    _triple("pow_triple_grad", r.uniform(0.5, 2.0, (2, 3)), _POW, more={"FactorTensor": np.array([2.5])}),
    # acos_double_grad (Paddle 3.3.1 registers no kernel of it), inside (-1, 1) away from the poles
    Case("acos_double_grad", {"x": r.uniform(-0.8, 0.8, (3, 4)), "grad_out": r.standard_normal((3, 4)),
                              "grad_x@GRAD": r.standard_normal((3, 4))}),
]
