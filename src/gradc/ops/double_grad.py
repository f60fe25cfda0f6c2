"""Paddle's own second-derivative op types, as Paddle's backward writes them into a program that differentiates a
gradient (a physics-informed loss: PaddleScience's Laplacians, `paddle.grad(..., create_graph=True)`): legacy
`tanh_grad_grad`, `sigmoid_grad_grad`, `matmul_v2_grad_grad` (and matmul v1's `matmul_grad_grad`),
`elementwise_add_grad_grad`, `elementwise_mul_grad_grad`, `reshape2_grad_grad`, PIR `pd_op.<op>_double_grad`; and
the third-derivative ops its backward writes when the loss differentiates a second derivative
(`paddle.incubate.autograd.jvp`):
`tanh_triple_grad`, `elementwise_mul_triple_grad`, PIR `pd_op.<op>_triple_grad`. gradc's own makers of the first
grad ops write these derivatives with plain ops (gradc.ops.activation_double); these types are for reading Paddle's
programs.

Each is defined by its computation with differentiable ops (``expansion``), which also gives its gradient (the
third derivative a training step of such a loss needs). Its slots are Paddle 3.3.1's: grad_x@GRAD is ddX, the grad
of the first grad op's X@GRAD; an absent ddX or ddY is zero. Kernels: gradc.executor.kernels.double_grad.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from ..shapes import numel
from . import activation, math, products  # noqa: F401  (the grad ops these differentiate)
from .composite import Formula, expansion, first
from .infer import same_as


def _zeros_where_unreached(expand):
    """The maker of ``expand`` (``expansion``), with a zero grad for each input it does not reach: an absent ddX
    or ddY leaves X or Y out of every product."""
    made = expansion(expand)

    def maker(g):
        ops = made(g)
        written = {name for op in ops for name in op.output_names()}
        f = Formula(g)
        for slot in g.opdef.inputs:
            for value, grad in zip(g.I(slot), g.IG(slot)):
                if grad != EMPTY_VAR and grad not in written:
                    f.into(grad, "fill_any_like", {"X": value}, {"value": 0.0, "dtype": -1})
        return ops + f.ops

    return maker


def _like(*pairs: tuple[str, str]):
    """Inference: each output (second) shaped and typed like an input (first)."""
    return lambda ctx: {out: (ctx.shape(slot), ctx.dtype(slot)) for slot, out in pairs}


def _by_out(first_grad: str, second):
    """tanh_grad_grad / sigmoid_grad_grad: grad_out@GRAD is the first grad op on ddX; Out@GRAD = second(out) dOut ddX
    (f'' written in the forward's output)."""

    def expand(f, g):
        out, dout, ddx = (first(g.I(slot)) for slot in ("Out", "grad_out", "grad_x@GRAD"))
        again = f.op(first_grad, {"Out": out, "Out@GRAD": ddx}, out, slot="X@GRAD")
        return {"Out@GRAD": f.mul(f.mul(dout, ddx, dout), second(f, out), dout), "grad_out@GRAD": again}

    defgrad(f"{first_grad}_grad", inputs=["Out", "grad_out", "grad_x@GRAD"], outputs=["Out@GRAD", "grad_out@GRAD"],
            infer=_like(("Out", "Out@GRAD"), ("grad_out", "grad_out@GRAD")), grad=expansion(expand), of=first_grad)


_by_out("tanh_grad", lambda f, out: f.scale(out, -2.0))                      # d(1 - out^2)/d out = -2 out
_by_out("sigmoid_grad", lambda f, out: f.scale(out, -2.0, 1.0))              # d(out - out^2)/d out = 1 - 2 out


def _two_terms(f, one, other, like):
    """The sum of the terms given (an absent ddX or ddY gives none); None when neither is."""
    terms = [term for term in (one, other) if term is not None]
    return terms[0] if len(terms) == 1 else f.add(*terms, like) if terms else None


@_zeros_where_unreached
def _matmul_again(f, g):
    """ddOut = ddX Y + X ddY; X@GRAD = the X grad of X ddY at dOut; Y@GRAD = the Y grad of ddX Y at dOut."""
    x, y, dout, ddx, ddy = (first(g.I(s)) for s in ("X", "Y", "grad_out", "grad_x@GRAD", "grad_y@GRAD"))
    flags = {"trans_x": g.attr("trans_x"), "trans_y": g.attr("trans_y")}
    grads = {}
    if ddy is not None:
        grads["X@GRAD"] = f.op("matmul_v2_grad", {"X": x, "Y": ddy, "Out@GRAD": dout}, x, flags, slot="X@GRAD")
    if ddx is not None:
        grads["Y@GRAD"] = f.op("matmul_v2_grad", {"X": ddx, "Y": y, "Out@GRAD": dout}, y, flags, slot="Y@GRAD")
    terms = [f.op("matmul_v2", {"X": a, "Y": b}, dout, flags) if None not in (a, b) else None
             for a, b in ((ddx, y), (x, ddy))]
    ddout = _two_terms(f, *terms, dout)
    return {**grads, **({"grad_out@GRAD": ddout} if ddout is not None else {})}


defgrad("matmul_v2_grad_grad", inputs=["X", "Y", "grad_out", "grad_x@GRAD?", "grad_y@GRAD?"],
        outputs=["X@GRAD", "Y@GRAD", "grad_out@GRAD"], attrs={"trans_x": False, "trans_y": False},
        infer=_like(("X", "X@GRAD"), ("Y", "Y@GRAD"), ("grad_out", "grad_out@GRAD")), grad=_matmul_again,
        of="matmul_v2_grad")


@_zeros_where_unreached
def _matmul_v1_again(f, g):
    """matmul_grad_grad (matmul v1, Out = alpha op(X) op(Y)): DDOut = alpha (ddX Y + X ddY); DX = the X grad of
    X ddY at dOut; DY = the Y grad of ddX Y at dOut; each by matmul / matmul_grad, which carry alpha."""
    x, y, dout, ddx, ddy = (first(g.I(s)) for s in ("X", "Y", "DOut", "DDX", "DDY"))
    grads = {}
    if ddy is not None:
        grads["DX"] = f.op("matmul_grad", {"X": x, "Y": ddy, "Out@GRAD": dout}, x, slot="X@GRAD", same=True)
    if ddx is not None:
        grads["DY"] = f.op("matmul_grad", {"X": ddx, "Y": y, "Out@GRAD": dout}, y, slot="Y@GRAD", same=True)
    terms = [f.op("matmul", {"X": a, "Y": b}, dout, same=True) if None not in (a, b) else None
             for a, b in ((ddx, y), (x, ddy))]
    ddout = _two_terms(f, *terms, dout)
    return {**grads, **({"DDOut": ddout} if ddout is not None else {})}


defgrad("matmul_grad_grad", inputs=["X", "Y", "DOut", "DDX?", "DDY?"], outputs=["DX", "DY", "DDOut"],
        attrs={"transpose_X": False, "transpose_Y": False, "alpha": 1.0, "head_number": 1},
        infer=_like(("X", "DX"), ("Y", "DY"), ("DOut", "DDOut")), grad=_matmul_v1_again, of="matmul_grad")


def _onto_dout(f, g, term, axis):
    """``term`` broadcast onto dOut's shape (added to zeros shaped like it), by the op's axis."""
    return f.add(f.fill_like(first(g.I("DOut")), 0.0), term, first(g.I("DOut")), axis)


def _ddout_of_sum(f, g, ddy_sign):
    """ddOut = ddX + ddy_sign ddY, broadcast onto dOut's shape (ddX trailing-aligned, ddY by axis)."""
    ddx, ddy = first(g.I("DDX")), first(g.I("DDY"))
    if ddy is not None and ddy_sign != 1.0:
        ddy = f.scale(ddy, ddy_sign)
    terms = [_onto_dout(f, g, ddx, -1) if ddx is not None else None,
             _onto_dout(f, g, ddy, g.attr("axis")) if ddy is not None else None]
    ddout = _two_terms(f, *terms, first(g.I("DOut")))
    return {"DDOut": ddout} if ddout is not None else {}


@_zeros_where_unreached
def _add_again(f, g):
    """ddOut = ddX + ddY."""
    return _ddout_of_sum(f, g, 1.0)


defgrad("elementwise_add_grad_grad", inputs=["Y", "DOut", "DDX?", "DDY?"], outputs=["DDOut"], attrs={"axis": -1},
        infer=same_as("DOut", "DDOut"), grad=_add_again, no_grad_inputs=["Y", "DOut"], of="elementwise_add_grad")


@_zeros_where_unreached
def _mul_again(f, g):
    """ddOut = ddX Y + X ddY; X@GRAD = ddY dOut summed to X's shape; Y@GRAD = ddX dOut summed to Y's shape."""
    x, y, dout, ddx, ddy = (first(g.I(s)) for s in ("X", "Y", "DOut", "DDX", "DDY"))
    axis = {"axis": g.attr("axis")}
    grads, terms = {}, [None, None]
    if ddy is not None:
        grads["X@GRAD"] = f.op("elementwise_mul_grad", {"X": x, "Y": ddy, "Out@GRAD": dout}, x, axis, slot="X@GRAD")
        terms[1] = _onto_dout(f, g, f.mul(x, ddy, dout, g.attr("axis")), -1)
    if ddx is not None:
        grads["Y@GRAD"] = f.op("elementwise_mul_grad", {"X": ddx, "Y": y, "Out@GRAD": dout}, y, axis, slot="Y@GRAD")
        terms[0] = _onto_dout(f, g, f.mul(ddx, y, dout, g.attr("axis")), -1)
    ddout = _two_terms(f, *terms, dout)
    return {**grads, **({"DDOut": ddout} if ddout is not None else {})}


defgrad("elementwise_mul_grad_grad", inputs=["X", "Y", "DOut", "DDX?", "DDY?"], outputs=["DDOut", "X@GRAD", "Y@GRAD"],
        attrs={"axis": -1}, infer=_like(("DOut", "DDOut"), ("X", "X@GRAD"), ("Y", "Y@GRAD")), grad=_mul_again,
        of="elementwise_mul_grad")


def _tanh_again(f, g):
    """Of tanh_grad_grad's dOutNew = -2 out dOut ddX and ddOut = (1 - out^2) ddX: the grads of out, dOut and ddX at
    their grads d_dOutNew (grad_out_new@GRAD) and d_ddOut (grad_out_grad@GRAD), either absent."""
    out, dout, ddx = (first(g.I(slot)) for slot in ("Out", "grad_out_forward", "grad_x_grad_forward"))
    d_new, d_ddout = first(g.I("grad_out_new@GRAD")), first(g.I("grad_out_grad@GRAD"))
    if d_new is None and d_ddout is None:
        return {}
    minus_two_out = f.scale(out, -2.0)
    d_out = [f.mul(f.mul(minus_two_out, ddx, out), d_ddout, out) if d_ddout is not None else None,
             f.mul(f.scale(f.mul(dout, ddx, out), -2.0), d_new, out) if d_new is not None else None]
    d_ddx = [f.op("tanh_grad", {"Out": out, "Out@GRAD": d_ddout}, out, slot="X@GRAD") if d_ddout is not None else None,
             f.mul(f.mul(minus_two_out, dout, out), d_new, out) if d_new is not None else None]
    grads = {"Out@GRAD": _two_terms(f, *d_out, out), "grad_x_grad_forward@GRAD": _two_terms(f, *d_ddx, out)}
    if d_new is not None:
        grads["grad_out_forward@GRAD"] = f.mul(f.mul(minus_two_out, ddx, out), d_new, out)
    return {slot: var for slot, var in grads.items() if var is not None}


defgrad("tanh_triple_grad", inputs=["Out", "grad_out_forward", "grad_x_grad_forward", "grad_out_new@GRAD?",
                                    "grad_out_grad@GRAD?"],
        outputs=["Out@GRAD", "grad_out_forward@GRAD", "grad_x_grad_forward@GRAD"],
        infer=_like(("Out", "Out@GRAD"), ("grad_out_forward", "grad_out_forward@GRAD"),
                    ("grad_x_grad_forward", "grad_x_grad_forward@GRAD")),
        grad=_zeros_where_unreached(_tanh_again), of="tanh_grad_grad")


def _mul_grad_of(f, g, x, y, dout, slot):
    """The ``slot`` grad (X@GRAD or Y@GRAD) of x * y at dOut, summed to that operand's shape."""
    like = x if slot == "X@GRAD" else y
    return f.op("elementwise_mul_grad", {"X": x, "Y": y, "Out@GRAD": dout}, like, {"axis": g.attr("axis")},
                slot=slot)


@_zeros_where_unreached
def _mul_third(f, g):
    """Of elementwise_mul_grad_grad's X@GRAD = ddY dOut, Y@GRAD = ddX dOut and ddOut = ddX Y + X ddY: the grads of
    X, Y, dOut, ddX and ddY at their grads D_DX, D_DY and D_DDOut, any of them (and ddX, ddY) absent."""
    x, y, dout, ddx, ddy, d_dx, d_dy, d_ddout = (first(g.I(s)) for s in (
        "X", "Y", "DOut", "DDX", "DDY", "D_DX", "D_DY", "D_DDOut"))
    axis = g.attr("axis")
    # (x, y, dOut): the grad of x * y at dOut; the operand whose grad it is stands only for its shape
    pairs = {"D_X": ((x, ddy, d_ddout, "X@GRAD"), None), "D_Y": ((ddx, y, d_ddout, "Y@GRAD"), None),
             "D_DDX": ((x, d_dy, dout, "X@GRAD"), (x, y, d_ddout, "X@GRAD")),
             "D_DDY": ((d_dx, y, dout, "Y@GRAD"), (x, y, d_ddout, "Y@GRAD"))}
    terms = {slot: [_mul_grad_of(f, g, *term) if term is not None and None not in term else None for term in found]
             for slot, found in pairs.items()}
    terms["D_DOut"] = [_onto_dout(f, g, f.mul(a, b, dout, axis), -1) if None not in (a, b) else None
                       for a, b in ((d_dx, ddy), (ddx, d_dy))]
    like = {"D_X": x, "D_Y": y, "D_DOut": dout, "D_DDX": x, "D_DDY": y}
    summed = {slot: _two_terms(f, *parts, like[slot]) for slot, parts in terms.items()}
    return {slot: var for slot, var in summed.items() if var is not None}


defgrad("elementwise_mul_triple_grad", inputs=["X", "Y", "DOut", "DDX?", "DDY?", "D_DX?", "D_DY?", "D_DDOut?"],
        outputs=["D_X", "D_Y", "D_DOut", "D_DDX", "D_DDY"], attrs={"axis": -1},
        infer=_like(("X", "D_X"), ("Y", "D_Y"), ("DOut", "D_DOut"), ("X", "D_DDX"), ("Y", "D_DDY")),
        grad=_mul_third, of="elementwise_mul_grad_grad")


def _reshape_again(g):
    """ddOut is ddX in dOut's shape: its grad is ddOut's grad in ddX's shape, the same op with the two swapped."""
    f = Formula(g)
    f.into(first(g.IG("DDX")), "reshape2_grad_grad", {"DDX": g.OG("DDOut"), "DOut": g.I("DDX")}, slot="DDOut",
           same=True)
    return f.ops


def _reshape_infer(ctx):
    ddx, dout = ctx.shape("DDX"), ctx.shape("DOut")
    if ddx is not None and dout is not None and -1 not in (numel(ddx), numel(dout)) and numel(ddx) != numel(dout):
        ctx.fail(f"DDX {ddx} cannot take DOut's shape {dout}: {numel(ddx)} and {numel(dout)} elements")
    return {"DDOut": (dout, ctx.dtype("DDX"))}


# Paddle's legacy backward of reshape2_grad (a Jacobian's reshape of a gradient, differentiated again)
defgrad("reshape2_grad_grad", inputs=["DDX", "DOut"], outputs=["DDOut"], attrs={"shape": [], "use_quantizer": False},
        infer=_reshape_infer, grad=_reshape_again, no_grad_inputs=["DOut"], of="reshape2_grad")
