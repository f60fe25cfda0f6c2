"""Paddle's legacy third-derivative ops of a product and a sum, as its backward writes them into a training program
whose loss holds second derivatives (a Burgers PINN's residual by `paddle.static.gradients`, then `minimize`):
`matmul_v2_triple_grad` and `elementwise_add_triple_grad`, the grads of matmul_v2_grad_grad's and
elementwise_add_grad_grad's outputs. Slots are Paddle 3.3.1's: matmul_v2_triple_grad reads ddX and ddY as grad_grad_x
and grad_grad_y, the grads of the double grad op's X@GRAD, Y@GRAD and grad_out@GRAD as grad_x@GRAD, grad_y@GRAD and
grad_grad_out@GRAD, and writes the grads of X, Y, dOut, ddX (grad_grad_x@GRAD) and ddY (grad_grad_y@GRAD). Each is
written with ops that have makers (``expansion``), so a fourth derivative follows. Kernels:
gradc.executor.kernels.triple_grad.
"""

from __future__ import annotations

from ..registry import defgrad
from . import double_grad  # noqa: F401  (the double grad ops these differentiate)
from .composite import expansion, first
from .double_grad import _like, _two_terms, _zeros_where_unreached


def _matmul_grad_of(f, g, x, y, dout, slot):
    """The ``slot`` grad (X@GRAD or Y@GRAD) of matmul(x, y) at dOut, with the op's transposes."""
    flags = {"trans_x": g.attr("trans_x"), "trans_y": g.attr("trans_y")}
    like = x if slot == "X@GRAD" else y
    return f.op("matmul_v2_grad", {"X": x, "Y": y, "Out@GRAD": dout}, like, flags, slot=slot)


def _matmul_third(f, g):
    """Of DX = G_X(X, ddY; dOut), DY = G_Y(ddX, Y; dOut), ddOut = ddX Y + X ddY at their grads d_dx, d_dy, d_ddout
    (G the matmul's grads, adjoint to it): d/dX = G_X(X, ddY; d_ddout), d/dY = G_Y(ddX, Y; d_ddout), d/d(dOut) =
    d_dx ddY + ddX d_dy, d/d(ddX) = G_X(ddX, d_dy; dOut) + G_X(ddX, Y; d_ddout), d/d(ddY) = G_Y(d_dx, ddY; dOut) +
    G_Y(X, ddY; d_ddout); any of the five absent."""
    x, y, dout, ddx, ddy, d_dx, d_dy, d_ddout = (first(g.I(s)) for s in (
        "X", "Y", "grad_out", "grad_grad_x", "grad_grad_y", "grad_x@GRAD", "grad_y@GRAD", "grad_grad_out@GRAD"))
    flags = {"trans_x": g.attr("trans_x"), "trans_y": g.attr("trans_y")}

    def grad(a, b, at, slot):
        return _matmul_grad_of(f, g, a, b, at, slot) if None not in (a, b, at) else None

    def product(a, b):
        return f.op("matmul_v2", {"X": a, "Y": b}, dout, flags) if None not in (a, b) else None

    summed = {"X@GRAD": grad(x, ddy, d_ddout, "X@GRAD"), "Y@GRAD": grad(ddx, y, d_ddout, "Y@GRAD"),
              "grad_out@GRAD": _two_terms(f, product(d_dx, ddy), product(ddx, d_dy), dout),
              "grad_grad_x@GRAD": _two_terms(f, grad(ddx, d_dy, dout, "X@GRAD"), grad(ddx, y, d_ddout, "X@GRAD"), x),
              "grad_grad_y@GRAD": _two_terms(f, grad(d_dx, ddy, dout, "Y@GRAD"), grad(x, ddy, d_ddout, "Y@GRAD"), y)}
    return {slot: var for slot, var in summed.items() if var is not None}


defgrad("matmul_v2_triple_grad", inputs=["X", "Y", "grad_out", "grad_grad_x?", "grad_grad_y?", "grad_x@GRAD?",
                                         "grad_y@GRAD?", "grad_grad_out@GRAD?"],
        outputs=["X@GRAD", "Y@GRAD", "grad_out@GRAD", "grad_grad_x@GRAD", "grad_grad_y@GRAD"],
        attrs={"trans_x": False, "trans_y": False},
        infer=_like(("X", "X@GRAD"), ("Y", "Y@GRAD"), ("grad_out", "grad_out@GRAD"), ("X", "grad_grad_x@GRAD"),
                    ("Y", "grad_grad_y@GRAD")),
        grad=_zeros_where_unreached(_matmul_third), of="matmul_v2_grad_grad")


def _add_third(f, g):
    """ddOut = ddX + ddY broadcast: its grads are d_ddout summed back to ddX's and ddY's shapes (elementwise_add's own
    grad op on ddX and ddY, linear in d_ddout)."""
    ddx, ddy, d_ddout = (first(g.I(s)) for s in ("DDX", "DDY", "D_DDOut"))
    return {out: f.op("elementwise_add_grad", {"X": ddx, "Y": ddy, "Out@GRAD": d_ddout}, like,
                      {"axis": g.attr("axis")}, slot=slot)
            for out, like, slot in (("D_DDX", ddx, "X@GRAD"), ("D_DDY", ddy, "Y@GRAD"))}


defgrad("elementwise_add_triple_grad", inputs=["DDX", "DDY", "D_DDOut"], outputs=["D_DDX", "D_DDY"],
        attrs={"axis": -1}, infer=_like(("DDX", "D_DDX"), ("DDY", "D_DDY")), grad=expansion(_add_third),
        no_grad_inputs=["DDX", "DDY"], of="elementwise_add_grad_grad")
