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


@kernel("matmul_v2_grad_grad")
def matmul_v2_grad_grad(k):
    x, y, dout = k.x("X"), k.x("Y"), k.x("grad_out")
    ddx, ddy = k.optional("grad_x@GRAD"), k.optional("grad_y@GRAD")
    flags = k.attr("trans_x"), k.attr("trans_y")

    def ddout():
        terms = [_matmul(a, b, *flags) for a, b in ((ddx, y), (x, ddy)) if a is not None and b is not None]
        return sum(terms[1:], terms[0]) if terms else np.zeros_like(dout)

    return k.grads({
        "X@GRAD": lambda: _matmul_grads(_Only("X@GRAD"), x, ddy, dout, *flags)["X@GRAD"] if ddy is not None
        else np.zeros_like(x),
        "Y@GRAD": lambda: _matmul_grads(_Only("Y@GRAD"), ddx, y, dout, *flags)["Y@GRAD"] if ddx is not None
        else np.zeros_like(y),
        "grad_out@GRAD": ddout})


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
