"""Kernels of gradc.ops.triple_grad: the grads of matmul_v2_grad_grad's and elementwise_add_grad_grad's outputs;
an absent input is zero."""

from __future__ import annotations

import numpy as np

from . import kernel
from .broadcast import align, reduce_to
from .double_grad import _Only
from .matmul import _matmul, _matmul_grads


def _grad_of(slot, a, b, at, flags):
    """The ``slot`` grad of matmul(a, b) at ``at``; None where an operand is absent."""
    if a is None or b is None or at is None:
        return None
    return _matmul_grads(_Only(slot), a, b, at, *flags)[slot]


def _sum(like, *terms):
    present = [term for term in terms if term is not None]
    return sum(present[1:], present[0]) if present else np.zeros_like(like)


@kernel("matmul_v2_triple_grad")
def matmul_v2_triple_grad(k):
    x, y, dout = k.x("X"), k.x("Y"), k.x("grad_out")
    ddx, ddy = k.optional("grad_grad_x"), k.optional("grad_grad_y")
    d_dx, d_dy, d_ddout = k.optional("grad_x@GRAD"), k.optional("grad_y@GRAD"), k.optional("grad_grad_out@GRAD")
    flags = k.attr("trans_x"), k.attr("trans_y")
    products = [_matmul(a, b, *flags) for a, b in ((d_dx, ddy), (ddx, d_dy)) if a is not None and b is not None]
    return k.grads({
        "X@GRAD": lambda: _sum(x, _grad_of("X@GRAD", x, ddy, d_ddout, flags)),
        "Y@GRAD": lambda: _sum(y, _grad_of("Y@GRAD", ddx, y, d_ddout, flags)),
        "grad_out@GRAD": lambda: _sum(dout, *products),
        "grad_grad_x@GRAD": lambda: _sum(x, _grad_of("X@GRAD", ddx, d_dy, dout, flags),
                                         _grad_of("X@GRAD", ddx, y, d_ddout, flags)),
        "grad_grad_y@GRAD": lambda: _sum(y, _grad_of("Y@GRAD", d_dx, ddy, dout, flags),
                                         _grad_of("Y@GRAD", x, ddy, d_ddout, flags))})


@kernel("elementwise_add_triple_grad")
def elementwise_add_triple_grad(k):
    """d_ddout (dOut's shape) summed back to ddX's shape (trailing-aligned) and ddY's (by axis)."""
    ddx, ddy, d_ddout = k.x("DDX"), k.x("DDY"), k.x("D_DDOut")
    return k.grads({"D_DDX": lambda: reduce_to(d_ddout, ddx, align(d_ddout, ddx, -1)[1]),
                    "D_DDY": lambda: reduce_to(d_ddout, ddy, align(d_ddout, ddy, k.attr("axis"))[1])})
