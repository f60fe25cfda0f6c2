"""Kernels of gradc.ops.double_grad: Paddle's second-derivative op types. An absent ddX or ddY is zero."""

from __future__ import annotations

import numpy as np

from . import kernel
from .broadcast import align, reduce_to
from .matmul import _matmul, _matmul_grads


def _by_out(name: str, first, second) -> None:
    """grad_out@GRAD = first(out) ddX, Out@GRAD = second(out) dOut ddX."""
    kernel(name)(lambda k: k.grads({
        "grad_out@GRAD": lambda: first(k.x("Out")) * k.x("grad_x@GRAD"),
        "Out@GRAD": lambda: second(k.x("Out")) * k.x("grad_out") * k.x("grad_x@GRAD")}))


_by_out("tanh_grad_grad", lambda out: 1 - out * out, lambda out: -2 * out)
_by_out("sigmoid_grad_grad", lambda out: out * (1 - out), lambda out: 1 - 2 * out)


class _Only:
    """Stands for a kernel context wanting one grad of a matmul's, to ask _matmul_grads for it."""

    def __init__(self, slot: str):
        self.slot = slot

    def grads(self, makers: dict) -> dict:
        return {self.slot: makers[self.slot]()}


def _matmul_second(x, y, dout, ddx, ddy, flags, alpha=None):
    """The makers of a matmul's second derivative: (dX, dY, ddOut); matmul v1's alpha scales ddOut (and the dOut
    given, which the caller scales)."""

    def ddout():
        terms = [_matmul(a, b, *flags) for a, b in ((ddx, y), (x, ddy)) if a is not None and b is not None]
        if not terms:
            return np.zeros_like(dout)
        total = sum(terms[1:], terms[0])
        return total if alpha is None else alpha * total

    return (lambda: _matmul_grads(_Only("X@GRAD"), x, ddy, dout, *flags)["X@GRAD"] if ddy is not None
            else np.zeros_like(x),
            lambda: _matmul_grads(_Only("Y@GRAD"), ddx, y, dout, *flags)["Y@GRAD"] if ddx is not None
            else np.zeros_like(y),
            ddout)


@kernel("matmul_v2_grad_grad")
def matmul_v2_grad_grad(k):
    dx, dy, ddout = _matmul_second(k.x("X"), k.x("Y"), k.x("grad_out"), k.optional("grad_x@GRAD"),
                                   k.optional("grad_y@GRAD"), (k.attr("trans_x"), k.attr("trans_y")))
    return k.grads({"X@GRAD": dx, "Y@GRAD": dy, "grad_out@GRAD": ddout})


@kernel("matmul_grad_grad")
def matmul_grad_grad(k):
    """matmul v1's: matmul_v2_grad_grad's products times alpha."""
    alpha = k.attr("alpha")
    dx, dy, ddout = _matmul_second(k.x("X"), k.x("Y"), k.x("DOut") * alpha, k.optional("DDX"), k.optional("DDY"),
                                   (k.attr("transpose_X"), k.attr("transpose_Y")), alpha)
    return k.grads({"DX": dx, "DY": dy, "DDOut": ddout})


def _onto(term: np.ndarray, dout: np.ndarray, axis: int) -> np.ndarray:
    """``term`` broadcast onto dOut's shape, lined up by ``axis``."""
    return np.broadcast_to(align(dout, term, axis)[1], dout.shape)


@kernel("elementwise_add_grad_grad")
def elementwise_add_grad_grad(k):
    dout, ddx, ddy, axis = k.x("DOut"), k.optional("DDX"), k.optional("DDY"), k.attr("axis")
    ddout = np.zeros_like(dout)
    for term, by in ((ddx, -1), (ddy, axis)):
        if term is not None:
            ddout = ddout + _onto(term, dout, by)
    return {"DDOut": ddout}


@kernel("elementwise_mul_grad_grad")
def elementwise_mul_grad_grad(k):
    x, y, dout, ddx, ddy, axis = k.x("X"), k.x("Y"), k.x("DOut"), k.optional("DDX"), k.optional("DDY"), k.attr("axis")

    def ddout():
        total = np.zeros_like(dout)
        for a, b in ((ddx, y), (x, ddy)):
            if a is not None and b is not None:
                total = total + _onto(np.multiply(*align(a, b, axis)), dout, -1)
        return total

    def grad_of(operand, other):   # d/d operand of <dOut, operand * other>: other dOut summed to its shape
        if other is None:
            return np.zeros_like(operand)
        aligned, other_aligned = align(operand, other, axis)
        return reduce_to(dout * other_aligned, operand, aligned)

    return k.grads({"DDOut": ddout, "X@GRAD": lambda: grad_of(x, ddy), "Y@GRAD": lambda: grad_of(y, ddx)})


@kernel("tanh_triple_grad")
def tanh_triple_grad(k):
    """Of dOutNew = -2 out dOut ddX and ddOut = (1 - out^2) ddX, at their grads d_dOutNew and d_ddOut (absent: zero)."""
    out, dout, ddx = k.x("Out"), k.x("grad_out_forward"), k.x("grad_x_grad_forward")
    d_new, d_ddout = k.optional("grad_out_new@GRAD"), k.optional("grad_out_grad@GRAD")
    d_new = np.zeros_like(out) if d_new is None else d_new
    d_ddout = np.zeros_like(out) if d_ddout is None else d_ddout
    return k.grads({"Out@GRAD": lambda: -2 * ddx * (out * d_ddout + dout * d_new),
                    "grad_out_forward@GRAD": lambda: -2 * out * ddx * d_new,
                    "grad_x_grad_forward@GRAD": lambda: (1 - out * out) * d_ddout - 2 * out * dout * d_new})


@kernel("elementwise_mul_triple_grad")
def elementwise_mul_triple_grad(k):
    """Of X@GRAD = ddY dOut, Y@GRAD = ddX dOut (each summed to its operand) and ddOut = ddX Y + X ddY, at their grads
    D_DX, D_DY and D_DDOut; an absent input is zero."""
    x, y, dout, axis = k.x("X"), k.x("Y"), k.x("DOut"), k.attr("axis")
    zero_x, zero_y = np.zeros_like(x), np.zeros_like(y)
    ddx, d_dx = (v if v is not None else zero_x for v in (k.optional("DDX"), k.optional("D_DX")))
    ddy, d_dy = (v if v is not None else zero_y for v in (k.optional("DDY"), k.optional("D_DY")))
    d_ddout = k.optional("D_DDOut")
    d_ddout = np.zeros_like(dout) if d_ddout is None else d_ddout
    x_, y_ = align(x, y, axis)
    ddx_, ddy_ = align(ddx, ddy, axis)
    d_dx_, d_dy_ = align(d_dx, d_dy, axis)
    return k.grads({"D_X": lambda: reduce_to(d_ddout * ddy_, x, x_),
                    "D_Y": lambda: reduce_to(d_ddout * ddx_, y, y_),
                    "D_DOut": lambda: np.broadcast_to(d_dx_ * ddy_ + ddx_ * d_dy_, dout.shape).copy(),
                    "D_DDX": lambda: reduce_to(dout * d_dy_ + d_ddout * y_, x, x_),
                    "D_DDY": lambda: reduce_to(dout * d_dx_ + d_ddout * x_, y, y_)})


kernel("reshape2_grad_grad")(lambda k: {"DDOut": k.x("DDX").reshape(k.x("DOut").shape)})
