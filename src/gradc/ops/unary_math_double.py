"""Second derivatives of the unary math ops (gradc.ops.unary_math): makers for their grad ops, composite
(gradc.ops.composite) so third derivatives follow, through gradc.ops.activation_double's unary_double: each
maker gives d/dv of X@GRAD = dOut * f'(v) from p = dOut * ddX, written with the family's own grad ops where
f'' is f' times something simple (1 / ((1 - x)(1 + x)) is atanh_grad's factor, 1 / (1 + x^2) atan_grad's).

Paddle 3.3.1 differentiates only acos_grad (acos_double_grad); gradc differentiates them all, as it does
the activations. The rounding grads are 0 * dOut: linear in dOut, flat in everything else.
"""

from __future__ import annotations

from . import unary_math  # noqa: F401  (registers the grad ops given makers here)
from .activation_double import unary_double


def _grad(f, op: str, x: str, dout: str, same: bool = False) -> str:
    """``op``'s grad kernel at x applied to dout: dout * f'(x)."""
    return f.op(op + "_grad", {"X": x, "Out@GRAD": dout}, x, slot="X@GRAD", same=same)


def _slope_over_one_minus_square(f, op: str, x: str, p: str) -> str:
    """x p f'(x) / ((1 - x)(1 + x)): asin's, acos's and acosh's f'' p (f'^2 is 1 / (1 - x^2) up to its sign)."""
    return _grad(f, "atanh", x, _grad(f, op, x, f.mul(x, p, x)))


for _name in ("floor", "ceil", "round", "trunc"):
    unary_double(f"{_name}_grad")
unary_double("reciprocal_grad", lambda f, g, out, p: f.scale(f.mul(p, out, p), -2.0))   # f' = -out^2
unary_double("expm1_grad", lambda f, g, out, p: p)                                       # f' = out + 1
# f' = 1 / (x ln b): f'' = -f' / x
unary_double("log2_grad", lambda f, g, x, p: f.scale(f.div(_grad(f, "log2", x, p), x, x), -1.0))
unary_double("log10_grad", lambda f, g, x, p: f.scale(f.div(_grad(f, "log10", x, p), x, x), -1.0))
unary_double("log1p_grad", lambda f, g, x, p: f.scale(_grad(f, "log1p", x, _grad(f, "log1p", x, p)), -1.0))
# f' = 1 / cos^2: f'' = 2 tan f'
unary_double("tan_grad", lambda f, g, x, p: f.scale(_grad(f, "tan", x, f.mul(p, f.unary("tan", x), x)), 2.0))
unary_double("asin_grad", lambda f, g, x, p: _slope_over_one_minus_square(f, "asin", x, p))    # x / (1 - x^2)^1.5
unary_double("acos_grad", lambda f, g, x, p: _slope_over_one_minus_square(f, "acos", x, p))    # -x / (1 - x^2)^1.5
unary_double("acosh_grad", lambda f, g, x, p: _slope_over_one_minus_square(f, "acosh", x, p))  # -x / (x^2 - 1)^1.5
# f' = 1 / (1 + x^2): f'' = -2 x f'^2
unary_double("atan_grad", lambda f, g, x, p: f.scale(_grad(f, "atan", x, _grad(f, "atan", x, f.mul(x, p, x))), -2.0))
# f' = 1 / sqrt(1 + x^2): f'' = -x f' / (1 + x^2)
unary_double("asinh_grad", lambda f, g, x, p: f.scale(_grad(f, "atan", x, _grad(f, "asinh", x, f.mul(x, p, x))),
                                                      -1.0))
# f' = 1 / (1 - x^2): f'' = 2 x f'^2
unary_double("atanh_grad", lambda f, g, x, p: f.scale(_grad(f, "atanh", x, _grad(f, "atanh", x, f.mul(x, p, x))),
                                                      2.0))
unary_double("sinh_grad", lambda f, g, x, p: _grad(f, "cosh", x, p))   # f' = cosh: f'' = sinh
unary_double("cosh_grad", lambda f, g, x, p: _grad(f, "sinh", x, p))   # f' = sinh: f'' = cosh
unary_double("erf_grad", lambda f, g, x, p: f.scale(_grad(f, "erf", x, f.mul(x, p, x)), -2.0))   # f'' = -2 x f'


def _logit(f, g, x, p):
    """f' = 1 / (x (1 - x)) inside the clip, 0 outside: f'' = (2 x - 1) f'^2, 0 outside."""
    return _grad(f, "logit", x, _grad(f, "logit", x, f.mul(f.scale(x, 2.0, -1.0), p, x), same=True), same=True)


def _stanh(f, g, x, p):
    """f' = a b (1 - t^2), t = tanh(a x): f'' = -2 a t f'."""
    scale_a = g.attr("scale_a")
    t = f.unary("tanh", f.scale(x, scale_a))
    return f.scale(_grad(f, "stanh", x, f.mul(t, p, x), same=True), -2.0 * scale_a)


unary_double("logit_grad", _logit)
unary_double("stanh_grad", _stanh)
