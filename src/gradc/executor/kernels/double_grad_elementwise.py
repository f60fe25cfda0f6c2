"""Kernels of gradc.ops.double_grad_elementwise; an absent ddX or ddY is zero."""

from __future__ import annotations

import numpy as np

from . import kernel
from .broadcast import align, reduce_to


@kernel("elementwise_sub_grad_grad")
def elementwise_sub_grad_grad(k):
    dout, ddx, ddy, axis = k.x("DOut"), k.optional("DDX"), k.optional("DDY"), k.attr("axis")
    ddout = np.zeros_like(dout)
    for term, by, sign in ((ddx, -1, 1), (ddy, axis, -1)):
        if term is not None:
            ddout = ddout + sign * np.broadcast_to(align(dout, term, by)[1], dout.shape)
    return {"DDOut": ddout}


@kernel("elementwise_div_grad_grad")
def elementwise_div_grad_grad(k):
    y, out, dx, axis = k.x("Y"), k.x("Out"), k.x("DX"), k.attr("axis")
    ddx, ddy = k.optional("DDX"), k.optional("DDY")
    y_ = align(out, y, axis)[1]
    ddy_ = np.zeros_like(y_) if ddy is None else align(out, ddy, axis)[1]
    ddout = ((np.zeros_like(out) if ddx is None else ddx) - out * ddy_) / y_
    return k.grads({"DDOut": lambda: ddout, "DOut": lambda: -ddy_ * dx,
                    "Y@GRAD": lambda: reduce_to(-dx * ddout, y, y_)})
