"""Paddle's legacy third-derivative ops of unary math, as `paddle.static.gradients` taken three times writes them
(a PINN's third-order residual through a sin or sigmoid activation): `sin_triple_grad`, `cos_triple_grad`,
`sigmoid_triple_grad`, `pow_triple_grad`. Each is the grad of its second-derivative op D(v, dOut, ddX) = (new, ddOut),
new = f''(v) dOut ddX (D's X@GRAD, or Out@GRAD of sigmoid's, v its Out), ddOut = f'(v) ddX, at the grads of new and
ddOut (either absent): v@GRAD = f'''(v) dOut ddX d_new + f''(v) ddX d_ddOut, dOut@GRAD = f''(v) ddX d_new,
ddX@GRAD = f''(v) dOut d_new + f'(v) d_ddOut. Written as the backward of D's own formula (gradc.ops.backward_of), so
a fourth derivative follows. Kernels: gradc.executor.kernels.triple_grad_unary.
"""

from __future__ import annotations

from ..registry import defgrad
from . import activation  # noqa: F401  (sigmoid_grad, which sigmoid's formula reads)
from .backward_of import backward_of
from .composite import first
from .double_grad import _like, _zeros_where_unreached
from .double_grad_unary import SECOND


def _sigmoid_first(f, g, out, ddx):
    return f.op("sigmoid_grad", {"Out": out, "Out@GRAD": ddx}, out, slot="X@GRAD")   # out (1 - out) ddX


def _third(first_grad, second, inputs: tuple[str, ...], outputs: tuple[str, ...]):
    """The maker of a triple-grad op whose ``inputs`` are (v, dOut, ddX, d_new, d_ddOut) and ``outputs`` the grads
    of the first three: D's formula at (v, dOut, ddX), differentiated from d_new and d_ddOut."""

    def formula(f, g):
        value, dout, ddx = (first(g.I(slot)) for slot in inputs[:3])
        return {"new": second(f, g, value, f.mul(dout, ddx, value)), "ddout": first_grad(f, g, value, ddx)}

    cotangents = {"new": inputs[3], "ddout": inputs[4]}
    return _zeros_where_unreached(backward_of(formula, cotangents, dict(zip(inputs[:3], outputs))))


def _of_second(forward: str, slots):
    """A TRIPLE entry of the forward's second-derivative op in SECOND: its formula, optional inputs and attributes."""
    first_grad, second, optional, attrs = SECOND[forward][1:5]
    return first_grad, second, slots, optional, attrs


_OF = {"sigmoid_triple_grad": "sigmoid_grad_grad"}   # the op each differentiates, where not <op>_double_grad
_SIN_SLOTS = (("X", "grad_out_forward", "grad_x_grad_forward", "grad_x@GRAD?", "grad_out_grad@GRAD?"),
              ("X@GRAD", "grad_out_forward@GRAD", "grad_x_grad_forward@GRAD"))
# type -> (its second-derivative op's formula: first grad, f'' times p; (inputs, outputs); optional inputs, attributes)
TRIPLE = {"sin_triple_grad": _of_second("sin", _SIN_SLOTS),
          "cos_triple_grad": _of_second("cos", _SIN_SLOTS),
          "sigmoid_triple_grad": (_sigmoid_first, lambda f, g, out, p: f.mul(f.scale(out, -2.0, 1.0), p, out),
                                  (("Out", "fwd_grad_out", "grad_grad_x", "grad_out@GRAD?", "grad_grad_out@GRAD?"),
                                   ("Out@GRAD", "fwd_grad_out@GRAD", "grad_grad_x@GRAD")), (), None),
          "pow_triple_grad": _of_second("pow", (("X", "grad_out", "grad_grad_x", "grad_x@GRAD?", "grad_grad_out@GRAD?"),
                                                ("X@GRAD", "grad_out@GRAD", "grad_grad_x@GRAD")))}

for _type, (_first, _second, (_inputs, _outputs), _optional, _attrs) in TRIPLE.items():
    _slots = tuple(slot.rstrip("?") for slot in _inputs)
    defgrad(_type, inputs=[*_inputs, *_optional], outputs=list(_outputs), attrs=_attrs,
            infer=_like(*zip(_slots, _outputs)), grad=_third(_first, _second, _slots, _outputs),
            no_grad_inputs=[slot.rstrip("?") for slot in _optional],
            of=_OF.get(_type, _type.replace("triple", "double")))
