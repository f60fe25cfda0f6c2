"""Paddle's legacy second-derivative ops of unary math, as `paddle.static.gradients` of a gradient writes them into a
program (a PINN's Laplacian through a sin activation): `sin_double_grad`, `cos_double_grad`, `square_grad_grad`,
`log_grad_grad`. Slots are Paddle 3.3.1's: X, grad_out (the first grad op's dOut) and grad_x@GRAD (ddX, the grad of
its X@GRAD = dOut f'(X)); grad_out@GRAD = f'(X) ddX and X@GRAD = f''(X) dOut ddX. Each is written with grad ops that
have makers (``expansion``), so a training step of such a loss takes third derivatives. Kernels:
gradc.executor.kernels.double_grad_unary.
"""

from __future__ import annotations

from ..registry import defgrad
from . import activation_double, math  # noqa: F401  (the grad ops these differentiate, with their makers)
from .composite import expansion, first


def _grad(f, type: str, x: str, dout: str) -> str:
    return f.op(type, {"X": x, "Out@GRAD": dout}, x, slot="X@GRAD")


def _unary_again(first_grad: str, second):
    """grad_out@GRAD = first_grad at dOut = ddX; X@GRAD = second(f, x, p), f''(x) p at p = dOut ddX."""

    def expand(f, g):
        x, dout, ddx = (first(g.I(slot)) for slot in ("X", "grad_out", "grad_x@GRAD"))
        return {"grad_out@GRAD": _grad(f, first_grad, x, ddx), "X@GRAD": second(f, x, f.mul(dout, ddx, x))}

    return expansion(expand)


def _log_second(f, x, p):
    return f.scale(_grad(f, "log_grad", x, _grad(f, "log_grad", x, p)), -1.0)   # -p / x^2


SECOND = {"sin": ("sin_double_grad", lambda f, x, p: _grad(f, "cos_grad", x, p)),                  # -sin x
          "cos": ("cos_double_grad", lambda f, x, p: f.scale(_grad(f, "sin_grad", x, p), -1.0)),  # -cos x
          "square": ("square_grad_grad", lambda f, x, p: f.scale(p, 2.0)),
          "log": ("log_grad_grad", _log_second)}

for _forward, (_type, _second) in SECOND.items():
    defgrad(_type, inputs=["X", "grad_out", "grad_x@GRAD"], outputs=["X@GRAD", "grad_out@GRAD"],
            infer=lambda ctx: {"X@GRAD": (ctx.shape("X"), ctx.dtype("X")),
                               "grad_out@GRAD": (ctx.shape("grad_out"), ctx.dtype("grad_out"))},
            grad=_unary_again(_forward + "_grad", _second), of=_forward + "_grad")
