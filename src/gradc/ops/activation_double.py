"""Second derivatives of activations: makers for the grad ops of gradc.ops.activation and the unary math
of gradc.ops.math, composite (gradc.ops.composite) so third derivatives follow.

Each grad op computes X@GRAD = dOut * f'(v), v the forward value it reads (X or Out). It is linear in dOut
with the same factor, so d/d(dOut) is the grad op itself applied to ddX (the grad of X@GRAD); and
d/dv = dOut * ddX * f''(v), written per op below from p = dOut * ddX. Where f'' is 0 (relu, leaky_relu, abs)
v is a no-grad input.
"""

from __future__ import annotations

from math import pi, sqrt

from ..ir import EMPTY_VAR, real_dtype
from ..registry import OPS, defgrad
from . import activation, math, nn  # noqa: F401  (register the grad ops given makers here)
from .complex_inputs import is_complex
from .composite import Formula, expansion, first

SQRT_2PI = sqrt(2 * pi)
TANH_GELU_C = sqrt(2 / pi)   # tanh-approximate gelu: 0.5 x (1 + tanh(c (x + a x^3)))
TANH_GELU_A = 0.044715


def unary_double(grad_type: str, second=None, flat: tuple[str, ...] = (), x: str = "X", out: str = "Out"):
    """Give ``grad_type`` its maker: ``second(f, g, v, p)`` returns d/dv (p = dOut * ddX) for the one input
    v that is not dOut or in ``flat`` (inputs the grad op is constant in); ``x``, ``out``: the forward's slots."""

    def maker(g):
        f = Formula(g)
        ddx, dout = first(g.OG(x + "@GRAD")), first(g.I(out + "@GRAD"))
        values = {slot: g.I(slot) for slot in g.opdef.inputs if slot != out + "@GRAD"}
        if is_complex(g, dout):
            return _on_complex(f, g, second, flat, values, ddx, dout, x, out)
        f.into(first(g.IG(out + "@GRAD")), g.fwd.type, {**values, out + "@GRAD": ddx}, slot=x + "@GRAD", same=True)
        for slot in values:
            wanted = first(g.IG(slot))
            if slot not in flat and wanted not in (None, EMPTY_VAR):
                result = second(f, g, first(g.I(slot)), f.mul(dout, ddx, dout))
                f.into(wanted, "scale", {"X": result}, {"scale": 1.0})
        return f.ops

    defgrad(grad_type, grad=maker, no_grad_inputs=flat)


# complex-differentiable grad ops whose ``second`` is written with grad ops (conjugating kernels), not arithmetic
SECOND_BY_GRAD_OPS = frozenset({"sin_grad", "cos_grad", "log_grad", "sqrt_grad"})


def _on_complex(f, g, second, flat, values, ddx, dout, x, out):
    """A holomorphic f's grad op on complex values, X@GRAD = dOut conj(phi(v)) (phi = f' read off v): d/d(dOut) =
    phi(v) ddX = conj(the grad op at dOut = conj(ddX)); d/dv = conj(conj(dOut) ddX phi'(v)), ``second`` at
    p = conj(dOut) ddX conjugated, or where ``second`` runs conjugating grad ops, ``second`` at p = dOut conj(ddX)."""
    conj_ddx = f.op("conj", {"X": ddx}, dout)   # ddX is not declared yet: shaped like dOut (a unary op)
    wanted = first(g.IG(out + "@GRAD"))
    if wanted != EMPTY_VAR:
        once = f.op(g.fwd.type, {**values, out + "@GRAD": conj_ddx}, dout, slot=x + "@GRAD", same=True)
        f.into(wanted, "conj", {"X": once})
    for slot in values:
        wanted = first(g.IG(slot))
        if slot not in flat and wanted not in (None, EMPTY_VAR):
            v = first(g.I(slot))
            if g.fwd.type in SECOND_BY_GRAD_OPS:
                f.into(wanted, "scale", {"X": second(f, g, v, f.mul(dout, conj_ddx, dout))}, {"scale": 1.0})
            else:
                f.into(wanted, "conj", {"X": second(f, g, v, f.mul(f.unary("conj", dout), ddx, dout))})
    return f.ops


for _name in ("leaky_relu", "abs", "brelu", "hard_shrink", "softshrink", "thresholded_relu"):   # piecewise linear
    unary_double(f"{_name}_grad", flat=("X",))
_real_abs_grad_grad = OPS["abs_grad"].grad
OPS["abs_grad"].no_grad_inputs -= {"X"}   # flat for a real X only: the real maker leaves its grad out (zero)


def _abs_grad_grad(g):
    """|x| of a complex x is not piecewise linear: its own maker (gradc.ops.complex_fft_double)."""
    if not is_complex(g, first(g.I("X"))):
        return _real_abs_grad_grad(g)
    # imported here: it registers the fft ops' grads, which reading relu_grad (this module) should not import
    from .complex_fft_double import abs_grad_of_complex
    return abs_grad_of_complex(g)


defgrad("abs_grad", grad=_abs_grad_grad)
for _name in ("relu6", "hard_sigmoid"):
    unary_double(f"{_name}_grad", flat=("Out",))
unary_double("clip_grad", flat=("X", "Min", "Max"))
unary_double("tanh_grad", lambda f, g, out, p: f.scale(f.mul(p, out, p), -2.0))             # f' = 1 - out^2
unary_double("sigmoid_grad", lambda f, g, out, p: f.mul(p, f.scale(out, -2.0, 1.0), p))  # f' = out (1 - out)
unary_double("exp_grad", lambda f, g, out, p: p)                                           # f' = out
unary_double("square_grad", lambda f, g, x, p: f.scale(p, 2.0))                            # f' = 2 x
unary_double("rsqrt_grad", lambda f, g, out, p: f.scale(f.mul(f.mul(p, out, p), out, p), -1.5))  # -out^3 / 2


def _log(f, g, x, p):
    """f' = 1 / x: f'' p = -p / x^2, by log_grad twice."""
    once = f.op("log_grad", {"X": x, "Out@GRAD": p}, x, slot="X@GRAD")
    return f.scale(f.op("log_grad", {"X": x, "Out@GRAD": once}, x, slot="X@GRAD"), -1.0)


def _sqrt(f, g, out, p):
    """f' = 1 / (2 out): f'' p = -p / (2 out^2), by sqrt_grad twice (so conjugated alike on complex values)."""
    once = f.op("sqrt_grad", {"Out": out, "Out@GRAD": p}, out, slot="X@GRAD")
    return f.scale(f.op("sqrt_grad", {"Out": out, "Out@GRAD": once}, out, slot="X@GRAD"), -2.0)


def _elu(f, g, out, p):
    """elu_grad = dOut where x > 0, else dOut (out + alpha): d/d(out) = p where x <= 0."""
    above = f.op("relu_grad", {"Out": first(g.I("X")), "Out@GRAD": p}, p, slot="X@GRAD")
    return f.sub(p, above, p)


def _silu(f, g, x, p):
    """f' = s (1 + x (1 - s)), s = sigmoid(x): f'' = s (1 - s) (2 + x (1 - 2 s)), in arithmetic (holomorphic on complex
    values, where sigmoid_grad would conjugate)."""
    s = f.unary("sigmoid", x)
    ds = f.mul(p, f.mul(s, f.scale(s, -1.0, 1.0), x), x)
    return f.mul(ds, f.scale(f.mul(x, f.scale(s, -2.0, 1.0), x), 1.0, 2.0), x)


def softplus_second(f, g, x, p):
    """f' = sigmoid(beta x) up to the threshold of beta x, 1 past it: f'' = beta s (1 - s) there, else 0."""
    beta, threshold = g.attr("beta"), g.attr("threshold")
    s = f.unary("sigmoid", f.scale(x, beta))
    curved = f.scale(f.op("sigmoid_grad", {"Out": s, "Out@GRAD": p}, x, slot="X@GRAD"), beta)
    past = f.op("relu_grad", {"Out": f.scale(x, beta, -threshold), "Out@GRAD": curved}, x, slot="X@GRAD")
    return f.sub(curved, past, x)


def _gelu(f, g, x, p):
    """Exact: f'' = phi(x) (2 - x^2). Approximate (t = tanh(z), z = c (x + a x^3), z' = c (1 + 3 a x^2)):
    f'' = (1 - t^2) (z' - x t z'^2 + 3 a c x^2)."""
    x2 = f.unary("square", x)
    if not g.attr("approximate"):
        phi = f.scale(f.unary("exp", f.scale(x2, -0.5)), 1 / SQRT_2PI)
        return f.mul(f.mul(phi, f.scale(x2, -1.0, 2.0), x), p, x)
    c, a = TANH_GELU_C, TANH_GELU_A
    t = f.unary("tanh", f.add(f.scale(x, c), f.scale(f.mul(x2, x, x), a * c), x))
    slope = f.scale(x2, 3 * a * c, c)
    bracket = f.add(f.sub(slope, f.mul(f.mul(x, t, x), f.unary("square", slope), x), x), f.scale(x2, 3 * a * c), x)
    return f.op("tanh_grad", {"Out": t, "Out@GRAD": f.mul(bracket, p, x)}, x, slot="X@GRAD")


def _swish(f, g, x, p):
    """f' = s (1 + b x (1 - s)), s = sigmoid(b x): f'' = b s (1 - s) (2 + b x (1 - 2 s))."""
    beta = g.attr("beta")
    s = f.unary("sigmoid", f.scale(x, beta))
    ds = f.op("sigmoid_grad", {"Out": s, "Out@GRAD": p}, x, slot="X@GRAD")
    return f.scale(f.mul(ds, f.scale(f.mul(x, f.scale(s, -2.0, 1.0), x), beta, 2.0), x), beta)


def _logsigmoid(f, g, x, p):
    """f' = sigmoid(-x): f'' = -sigmoid(-x) (1 - sigmoid(-x))."""
    s = f.unary("sigmoid", f.scale(x, -1.0))
    return f.scale(f.op("sigmoid_grad", {"Out": s, "Out@GRAD": p}, x, slot="X@GRAD"), -1.0)


def _softsign(f, g, x, p):
    """f' = 1 / (1 + |x|)^2: f'' = -2 sign(x) f' / (1 + |x|)."""
    once = f.op("softsign_grad", {"X": x, "Out@GRAD": p}, x, slot="X@GRAD")
    return f.scale(f.mul(f.div(once, f.scale(f.unary("abs", x), 1.0, 1.0), x), f.unary("sign", x), x), -2.0)


def _tanh_shrink(f, g, x, p):
    """f' = tanh(x)^2: f'' = 2 tanh(x) (1 - tanh(x)^2)."""
    t = f.unary("tanh", x)
    return f.scale(f.op("tanh_grad", {"Out": t, "Out@GRAD": f.mul(t, p, x)}, x, slot="X@GRAD"), 2.0)


unary_double("swish_grad", _swish)
unary_double("logsigmoid_grad", _logsigmoid)
unary_double("softsign_grad", _softsign)
_real_softsign_grad_grad = OPS["softsign_grad"].grad


@expansion
def _softsign_grad_of_complex(f, g):
    """X@GRAD = d / (1 + |x|) - Re(conj(d) x) sign(x) / (1 + |x|)^2 (the kernel's, not holomorphic) written with the
    ops gradc differentiates on complex values (abs, real, complex, conj, the arithmetic); sign(x) = x / |x| needs
    x != 0, where |x| has no derivative either."""
    x, d = first(g.I("X")), first(g.I("Out@GRAD"))
    size = f.op("abs", {"X": x}, x, dtype=real_dtype(g.block.find_var(x).dtype))
    zeros = f.scale(size, 0.0)

    def lifted(v):
        return f.op("complex", {"X": v, "Y": zeros}, x)
    grown = f.scale(lifted(size), 1.0, 1.0)
    along = f.op("real", {"X": f.mul(f.unary("conj", d), x, x)}, size)
    pulled = f.div(f.mul(lifted(along), f.div(x, lifted(size), x), x), f.mul(grown, grown, x), x)
    return {"X@GRAD": f.sub(f.div(d, grown, x), pulled, x)}


defgrad("softsign_grad", grad=lambda g: (_softsign_grad_of_complex if is_complex(g, first(g.I("X")))
                                          else _real_softsign_grad_grad)(g))
unary_double("tanh_shrink_grad", _tanh_shrink)
unary_double("log_grad", _log)
unary_double("sqrt_grad", _sqrt)
unary_double("elu_grad", _elu, flat=("X",))
unary_double("silu_grad", _silu, flat=("Out",))   # gradc's kernel reads X only
unary_double("softplus_grad", softplus_second)
unary_double("gelu_grad", _gelu)


def pow_second(f, g, x, p):
    """f' = k x^(k-1): f'' p = k (pow_grad with factor k - 1 of p), by the FactorTensor when there is one."""
    factor = first(g.I("FactorTensor"))
    if factor is None:
        once = f.op("pow_grad", {"X": x, "Out@GRAD": p}, x, {"factor": g.attr("factor") - 1.0}, slot="X@GRAD")
        return f.scale(once, g.attr("factor"))
    lower = f.scale(factor, 1.0, -1.0)
    once = f.op("pow_grad", {"X": x, "FactorTensor": lower, "Out@GRAD": p}, x, slot="X@GRAD", same=True)
    return f.mul(once, factor, x)


unary_double("pow_grad", pow_second, flat=("FactorTensor",))


def softmax_grad_maker(g):
    """softmax_grad = out (d - sum(d out)) along the axis: symmetric in d, so d/d(dOut) is the grad op applied
    to ddX; d/d(out) = ddX (d - sum(d out)) - d sum(ddX out)."""
    f = Formula(g)
    out, dout, ddx, axis = first(g.I("Out")), first(g.I("Out@GRAD")), first(g.OG("X@GRAD")), g.attr("axis")
    f.into(first(g.IG("Out@GRAD")), "softmax_grad", {"Out": out, "Out@GRAD": ddx}, slot="X@GRAD", same=True)
    wanted = first(g.IG("Out"))
    if wanted != EMPTY_VAR:
        centred = f.sub(dout, f.sum_along(f.mul(dout, out, out), axis), out)
        f.into(wanted, "elementwise_mul", {"X": ddx, "Y": centred})
        f.into(wanted, "elementwise_mul", {"X": f.scale(dout, -1.0), "Y": f.sum_along(f.mul(ddx, out, out), axis)})
    return f.ops


def _log_softmax(g):
    """log_softmax_grad = d - exp(out) sum(d) along the axis: d/d(dOut) = ddX - sum(exp(out) ddX),
    d/d(out) = -exp(out) ddX sum(d)."""
    f = Formula(g)
    out, dout, ddx, axis = first(g.I("Out")), first(g.I("Out@GRAD")), first(g.OG("X@GRAD")), g.attr("axis")
    p = f.unary("exp", out)
    wanted = first(g.IG("Out@GRAD"))
    if wanted != EMPTY_VAR:
        f.into(wanted, "elementwise_sub", {"X": ddx, "Y": f.sum_along(f.mul(p, ddx, out), axis)})
    wanted = first(g.IG("Out"))
    if wanted != EMPTY_VAR:
        f.into(wanted, "elementwise_mul", {"X": f.scale(f.mul(p, ddx, out), -1.0), "Y": f.sum_along(dout, axis)})
    return f.ops


defgrad("softmax_grad", grad=softmax_grad_maker)
defgrad("log_softmax_grad", grad=_log_softmax)


def celu_second(f, g, x, p):
    """f' = exp(x / alpha) where x <= 0, 1 past it: f'' p = (celu_grad - the part past 0) / alpha."""
    once = f.op("celu_grad", {"X": x, "Out@GRAD": p}, x, slot="X@GRAD", same=True)
    above = f.op("relu_grad", {"Out": x, "Out@GRAD": p}, x, slot="X@GRAD")
    return f.scale(f.sub(once, above, x), 1.0 / g.attr("alpha"))


def _mish(f, g, x, p):
    """f = x t, t = tanh(sp), sp = softplus (x past the threshold), s = sp':
    f'' = (1 - t^2) (2 s + x (s' - 2 t s^2))."""
    softplus = {"beta": 1.0, "threshold": g.attr("threshold")}
    t = f.unary("tanh", f.unary("softplus", x, softplus))
    s = f.op("softplus_grad", {"X": x, "Out@GRAD": f.fill_like(x, 1.0)}, x, softplus, slot="X@GRAD")
    ds = f.op("sigmoid_grad", {"Out": s, "Out@GRAD": x}, x, slot="X@GRAD")   # x s', s' = 0 past the threshold
    bracket = f.sub(f.add(f.scale(s, 2.0), ds, x), f.scale(f.mul(f.mul(x, t, x), f.unary("square", s), x), 2.0), x)
    return f.op("tanh_grad", {"Out": t, "Out@GRAD": f.mul(bracket, p, x)}, x, slot="X@GRAD")


def _hard_swish(f, g, x, p):
    """f = x clip(x + offset, 0, threshold) / scale: f'' = 2 / scale where 0 < x + offset < threshold."""
    offset = g.attr("offset")
    inside = f.op("brelu_grad", {"X": x, "Out@GRAD": p}, x, {"t_min": -offset, "t_max": g.attr("threshold") - offset},
                  slot="X@GRAD")
    return f.scale(inside, 2.0 / g.attr("scale"))


unary_double("sin_grad", lambda f, g, x, p: f.op("cos_grad", {"X": x, "Out@GRAD": p}, x, slot="X@GRAD"))  # -sin x
unary_double("cos_grad", lambda f, g, x, p: f.scale(f.op("sin_grad", {"X": x, "Out@GRAD": p}, x, slot="X@GRAD"),
                                                    -1.0))                                              # -cos x
unary_double("selu_grad", lambda f, g, out, p: f.sub(p, f.op("relu_grad", {"Out": out, "Out@GRAD": p}, p,
                                                              slot="X@GRAD"), p))   # d/d(out) = 1 where out <= 0
unary_double("celu_grad", celu_second)
unary_double("mish_grad", _mish)
unary_double("hard_swish_grad", _hard_swish)
