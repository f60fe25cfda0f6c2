"""Second derivatives of gradc.ops.extra_math: makers for its grad ops, written with differentiable ops
(gradc.ops.composite) so third derivatives follow. Paddle 3.3.1 differentiates none of these grad ops.

    gammaln'' = polygamma(1)
    gammaincc_grad: y@GRAD = dOut s(y), s' = s (x - 1 - y) / y, s from gammaincc_grad itself at dOut = 1 (x, the
        shape, stays undifferentiated, as in the first derivative)
    multiplex_grad, reduce_as_grad: linear in dOut (their forward applied to ddX)
    swiglu_grad, norm_grad, margin_cross_entropy_grad: their computation written again from their inputs (the
        saved Norm and Softmax are constants) and differentiated
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from .activation_double import unary_double
from .composite import Formula, expansion, first, linear
from .extra_math import angular_margin  # also registers the grad ops given makers here


def _gammaln(f, g, x, p):
    """f' = digamma: f'' p = digamma' p = polygamma_grad(p) with n = 0."""
    return f.op("polygamma_grad", {"x": x, "out@GRAD": p}, x, {"n": 0}, slot="x@GRAD")


def _gammaincc_again(g):
    """y@GRAD = dOut s, s = gammaincc_grad at dOut = 1 (its kernel keeps the digits that exp((x - 1) log y - y -
    lgamma(x)) loses at large x): d/d(dOut) = ddY s, d/dy = ddY dOut s ((x - 1 - y) / y)."""
    ddy = first(g.OG("y@GRAD"))
    if ddy is None:
        return []
    f = Formula(g)
    x, y, dout = first(g.I("x")), first(g.I("y")), first(g.I("out@GRAD"))
    slope = f.op("gammaincc_grad", {"x": x, "y": y, "out@GRAD": f.fill_like(y, 1.0)}, y, slot="y@GRAD")
    f.into(first(g.IG("out@GRAD")), "elementwise_mul", {"X": ddy, "Y": slope})
    if first(g.IG("y")) not in (None, EMPTY_VAR):
        curvature = f.div(f.sub(f.scale(x, 1.0, -1.0), y, y), y, y)
        f.into(first(g.IG("y")), "elementwise_mul", {"X": f.mul(f.mul(ddy, dout, y), slope, y), "Y": curvature})
    return f.ops


def _silu_and_slope(f, a):
    """silu(a) = a sigmoid(a) and its derivative sigmoid(a) (1 + a (1 - sigmoid(a)))."""
    gate = f.unary("sigmoid", a)
    slope = f.mul(gate, f.scale(f.mul(a, f.scale(gate, -1.0, 1.0), a), 1.0, 1.0), a)
    return f.mul(a, gate, a), slope


@expansion
def _swiglu_again(f, g):
    """x@GRAD = dOut y silu'(x), y@GRAD = dOut silu(x); without y, of x's halves a, b, concatenated."""
    x, y, dout = first(g.I("x")), first(g.I("y")), first(g.I("out@GRAD"))
    if y is not None:
        silu, slope = _silu_and_slope(f, x)
        return {"x@GRAD": f.mul(f.mul(dout, y, dout), slope, x), "y@GRAD": f.mul(dout, silu, dout)}
    halves = [g.tmp(x, lambda s: [*s[:-1], s[-1] // 2 if s[-1] >= 0 else -1]) for _ in range(2)]
    f.emit("split", {"X": x}, {"Out": halves}, {"axis": -1, "num": 2, "sections": []})   # even at run-time sizes
    a, b = halves
    silu, slope = _silu_and_slope(f, a)
    return {"x@GRAD": f.op("concat", {"X": [f.mul(f.mul(dout, b, dout), slope, dout), f.mul(dout, silu, dout)]},
                           x, {"axis": -1})}


@expansion
def _norm_again(f, g):
    """Norm = sqrt(sum x^2 + epsilon), Out = x / Norm, X@GRAD = (dOut - Out sum(dOut Out)) / Norm, sums along axis."""
    x, dout, axis = first(g.I("X")), first(g.I("Out@GRAD")), g.attr("axis")
    size = f.unary("sqrt", f.scale(f.sum_along(f.mul(x, x, x), axis), 1.0, g.attr("epsilon")))
    out = f.div(x, size, x)
    along = f.sum_along(f.mul(dout, out, dout), axis)
    return {"X@GRAD": f.div(f.sub(dout, f.mul(out, along, dout), dout), size, dout)}


def _one_hot_rows(f, g, label: str, logits: str) -> str:
    """The labels ([N] or [N, 1]) as one-hot rows [N, classes] in Logits' dtype; the class count read from Logits
    at run time when it is declared unknown. A Logits of unknown rank is a matrix all the same (the forward's kernel
    indexes it by rows and labels), and a Label of unknown rank is flattened to [N] by a reshape2."""
    rows, classes = g.shape(logits) or (-1, -1)
    dtype = int(g.block.find_var(logits).dtype)
    depth = {}
    if classes < 0:
        dims = f.op("shape", {"Input": logits}, logits, dims=lambda _: [2], dtype=VarType.INT32)
        depth = {"depth_tensor": f.slice(dims, 0, 1, 2)}
    labels = g.shape(label)
    if labels is None:
        label = f.op("reshape2", {"X": label}, label, {"shape": [-1]}, more={"XShape": f.xshape(label)})
        labels = [rows]
    hot = f.op("one_hot_v2", {"X": label, **depth}, logits,
               {"depth": classes, "dtype": dtype, "allow_out_of_range": False}, dims=lambda _: [*labels, classes])
    if len(labels) == 1:
        return hot
    return f.op("squeeze2", {"X": hot}, logits, {"axes": [1]}, more={"XShape": f.xshape(hot)},
                dims=lambda _: [rows, classes])


@expansion
def _margin_cross_entropy_again(f, g):
    """With c the label's cosine, t = cos(m1 acos(c) + m2) - m3 (c - m3 without the angle margins) and
    z = scale (logits + onehot (t - c)): Logits@GRAD = scale dLoss (softmax(z) - onehot) (1 + onehot (t' - 1)),
    t' = m1 sin(m1 acos(c) + m2) / sqrt(1 - c^2) (1 without)."""
    logits, label, dloss = first(g.I("Logits")), first(g.I("Label")), first(g.I("Loss@GRAD"))
    hot = _one_hot_rows(f, g, label, logits)
    cosine = f.sum_along(f.mul(logits, hot, logits), 1)
    m1, m2, m3, scale = (g.attr(name) for name in ("margin1", "margin2", "margin3", "scale"))
    slope = None
    if angular_margin(m1, m2):
        angle = f.scale(f.unary("acos", cosine), m1, m2)
        sine = f.unary("sqrt", f.scale(f.mul(cosine, cosine, cosine), -1.0, 1.0))
        slope = f.div(f.scale(f.unary("sin", angle), m1), sine, cosine)
        target = f.unary("cos", angle)
    else:
        target = cosine
    shift = f.mul(hot, f.scale(f.sub(target, cosine, cosine), 1.0, -m3), logits)
    softmax = f.op("softmax", {"X": f.scale(f.add(logits, shift, logits), scale)}, logits, {"axis": -1})
    grad = f.mul(f.sub(softmax, hot, logits), f.scale(dloss, scale), logits)
    if slope is not None:
        grad = f.mul(grad, f.add(f.mul(hot, f.scale(slope, 1.0, -1.0), logits), f.fill_like(logits, 1.0), logits),
                     logits)
    return {"Logits@GRAD": grad}


unary_double("gammaln_grad", _gammaln, x="x", out="out")
defgrad("gammaincc_grad", grad=_gammaincc_again, no_grad_inputs=["x"])
defgrad("multiplex_grad", grad=linear("multiplex", passed=("Ids",)), no_grad_inputs=["X", "Ids"])
defgrad("reduce_as_grad", grad=linear("reduce_as", x="x", out="out", passed=("target",)),
        no_grad_inputs=["x", "target"])
defgrad("swiglu_grad", grad=_swiglu_again)
defgrad("norm_grad", grad=_norm_again, no_grad_inputs=["Norm"])
defgrad("margin_cross_entropy_grad", grad=_margin_cross_entropy_again, no_grad_inputs=["Label", "Softmax"])
