"""Second derivatives of the special functions (gradc.ops.special_math): makers for their grad ops, composite
(gradc.ops.composite) so third derivatives follow, through gradc.ops.activation_double's unary_double: each maker
gives d/dv of X@GRAD = dOut * f'(v) from p = dOut * ddX, written with the family's own ops, whose derivatives are
the family again:

    lgamma'' = digamma' = polygamma(1)    polygamma(n)'' = polygamma(n + 1)' = polygamma(n + 2)
    erfinv'' = 2 erfinv erfinv' (from Out)    i0'' = i1'    i0e'' = i1e' - sign(x) i0e'
    i1'' = i1 - I2(x) / x    i1e'' = -2 sign(x) i1e' - exp(-|x|) I2(x) / x

(I2 the modified Bessel function of order 2). Paddle 3.3.1 differentiates none of these grad ops. The grads of
i0e, i1 and i1e read out but compute from x alone (gradc.executor.kernels.special_math_bessel), so out is flat
in them. i0e' and i1e' have kinks at 0, where these give the one-sided second derivatives of x's sign.
"""

from __future__ import annotations

from math import factorial

from ..ir import VarType
from . import special_math  # noqa: F401  (registers the grad ops given makers here)
from .activation_double import unary_double
from .composite import first

_I2_SERIES_TERMS = 9    # the terms of I2(x) / x's series at |x| <= 1 after the 9th are below 1e-18 of the sum
_I2_SERIES_UP_TO = 1.0  # past it the recurrence I2 = I0 - 2 I1 / x cancels less than 2 of float64's digits


def _grad(f, op: str, x: str, dout: str, attrs: dict | None = None, out: str | None = None) -> str:
    """``op``'s grad kernel at x (lowercase slots, Paddle's newer ops) applied to dout: dout * op'(x). ``out``:
    the forward's value where the grad op takes it."""
    inputs = {"x": x, "out@GRAD": dout, **({"out": out} if out is not None else {})}
    return f.op(op + "_grad", inputs, x, attrs, slot="x@GRAD")


def _forward(f, op: str, x: str) -> str:
    return f.op(op, {"x": x}, x, slot="out")


def _sign_bit(f, x: str) -> str:
    """+-1 by x's sign bit (-1 at -0), as the first derivatives' kinks take it: sign(x) is 0 at +-0."""
    return f.op("copysign", {"x": f.fill_like(x, 1.0), "y": x}, x, slot="out")


def _erfinv(f, g, out, p):
    """f' = sqrt(pi) / 2 exp(out^2), out = erfinv(x): d/d(out) of dOut f' = 2 out p f'."""
    once = f.op("erfinv_grad", {"Out": out, "Out@GRAD": p}, out, slot="X@GRAD")
    return f.scale(f.mul(out, once, out), 2.0)


def _lgamma(f, g, x, p):
    """f' = digamma: f'' p = digamma_grad(p)."""
    return f.op("digamma_grad", {"X": x, "Out@GRAD": p}, x, slot="X@GRAD")


def _digamma(f, g, x, p):
    """f' = polygamma(1): f'' p = polygamma_grad(p) with n = 1."""
    return _grad(f, "polygamma", x, p, {"n": 1})


def _polygamma(f, g, x, p):
    """f' = polygamma(n + 1): f'' p = polygamma_grad(p) with n + 1."""
    return _grad(f, "polygamma", x, p, {"n": g.attr("n") + 1})


def _i0(f, g, x, p):
    """f' = i1: f'' p = i1_grad(p) (x fills i1_grad's out, of which it reads only the shape)."""
    return _grad(f, "i1", x, p, out=x)


def _i0e(f, g, x, p):
    """f' = i1e - sign(x) i0e: f'' = i1e' - sign(x) i0e' (sign flat away from 0)."""
    i1e_slope = _grad(f, "i1e", x, p, out=x)   # i1e_grad reads only out's shape, which is x's
    i0e_slope = _grad(f, "i0e", x, p, out=first(g.I("out")))
    return f.sub(i1e_slope, f.mul(_sign_bit(f, x), i0e_slope, x), x)


def _i2_over_x(f, x: str, scaled: bool) -> str:
    """I2(x) / x (odd, 0 at 0), times exp(-|x|) when ``scaled``: the derivative of i1(x) / x, by which i1's and
    i1e's slopes change. Past |x| = 1 by the recurrence I2 = I0 - 2 I1 / x; up to it by the series
    (x / 4) sum_k (x^2 / 4)^k / (k! (k + 2)!), where the recurrence cancels (and divides by 0 at 0). Each branch
    reads x only where it is taken (1 elsewhere), so the other's backward does not multiply 0 by inf."""
    ones = f.fill_like(x, 1.0)
    inside = f.op("less_equal", {"X": f.unary("abs", x), "Y": f.fill_like(x, _I2_SERIES_UP_TO)}, x, {"axis": -1},
                  dtype=VarType.BOOL)
    far_x = f.op("where", {"Condition": inside, "X": ones, "Y": x}, x)
    near_x = f.op("where", {"Condition": inside, "X": x, "Y": ones}, x)
    i0, i1 = ("i0e", "i1e") if scaled else ("i0", "i1")
    i2 = f.sub(_forward(f, i0, far_x), f.scale(f.div(_forward(f, i1, far_x), far_x, x), 2.0), x)
    far = f.div(i2, far_x, x)
    quarter_square = f.scale(f.unary("square", near_x), 0.25)
    coefficients = [1.0 / (factorial(k) * factorial(k + 2)) for k in range(_I2_SERIES_TERMS)]
    series = f.scale(quarter_square, coefficients[-1], coefficients[-2])
    for coefficient in reversed(coefficients[:-2]):   # Horner
        series = f.scale(f.mul(series, quarter_square, x), 1.0, coefficient)
    near = f.mul(f.scale(near_x, 0.25), series, x)
    if scaled:
        near = f.mul(near, f.unary("exp", f.scale(f.unary("abs", near_x), -1.0)), x)
    return f.op("where", {"Condition": inside, "X": near, "Y": far}, x)


def _i1(f, g, x, p):
    """f' = i0 - i1 / x: f'' = i1 - I2 / x, so f'' p = i0_grad(p) - p I2 / x."""
    return f.sub(_grad(f, "i0", x, p), f.mul(p, _i2_over_x(f, x, scaled=False), x), x)


def _i1e(f, g, x, p):
    """f' = exp(-|x|) (i1' - sign(x) i1): f'' = -2 sign(x) f' - exp(-|x|) I2 / x."""
    slope = _grad(f, "i1e", x, p, out=first(g.I("out")))
    return f.sub(f.scale(f.mul(_sign_bit(f, x), slope, x), -2.0), f.mul(p, _i2_over_x(f, x, scaled=True), x), x)


unary_double("erfinv_grad", _erfinv)
unary_double("lgamma_grad", _lgamma)
unary_double("digamma_grad", _digamma)
unary_double("polygamma_grad", _polygamma, x="x", out="out")
unary_double("i0_grad", _i0, x="x", out="out")
for _name, _second in (("i0e", _i0e), ("i1", _i1), ("i1e", _i1e)):
    unary_double(f"{_name}_grad", _second, flat=("out",), x="x", out="out")
