"""Paddle's legacy second-derivative ops of unary math, as `paddle.static.gradients` of a gradient writes them into a
program (a PINN's Laplacian through a sin activation): `sin_double_grad`, `cos_double_grad`, `square_grad_grad`,
`log_grad_grad`, and of activations with attributes, `softplus_double_grad` (an SDF's Eikonal loss through a softplus
MLP), `elu_grad_grad`, `celu_grad_grad`, `pow_double_grad`; of sqrt and rsqrt, which read Out and the first grad's dX,
`sqrt_grad_grad`, `rsqrt_grad_grad`; of piecewise linear ones, `leaky_relu_grad_grad`, `abs_double_grad`,
`clip_double_grad` (grad_out@GRAD only); and `acos_double_grad` (its slots x and x@GRAD lower-case). Slots are Paddle
3.3.1's: X, grad_out (the first grad op's dOut) and grad_x@GRAD (ddX, the grad of its X@GRAD = dOut f'(X));
grad_out@GRAD = f'(X) ddX and X@GRAD = f''(X) dOut ddX. Each is written with grad ops that have makers
(``expansion``), so a training step of such a loss takes third derivatives.
Kernels: gradc.executor.kernels.double_grad_unary.
"""

from __future__ import annotations

from ..registry import defgrad, get
from . import math  # noqa: F401  (the grad ops these differentiate, with their makers)
from .activation_double import celu_second, pow_second, softplus_second
from .composite import expansion, first
from .double_grad import _like
from .unary_math_double import _slope_over_one_minus_square


def _grad(f, type: str, x: str, dout: str) -> str:
    return f.op(type, {"X": x, "Out@GRAD": dout}, x, slot="X@GRAD")


def _log_second(f, g, x, p):
    return f.scale(_grad(f, "log_grad", x, _grad(f, "log_grad", x, p)), -1.0)   # -p / x^2


def _elu_grad(f, x: str, dout: str) -> str:
    """elu_grad reads the forward's Out, which elu_grad_grad does not carry: recomputed from X."""
    out = f.op("elu", {"X": x}, x, same=True)
    return f.op("elu_grad", {"X": x, "Out": out, "Out@GRAD": dout}, x, slot="X@GRAD", same=True)


def _elu_second(f, g, x, p):
    return f.sub(_elu_grad(f, x, p), f.op("relu_grad", {"Out": x, "Out@GRAD": p}, x, slot="X@GRAD"), x)  # alpha e^x p


def _plain_grad(forward: str):
    """The forward's grad op at (X, dOut), of an op without attributes."""
    return lambda f, g, x, dout: _grad(f, forward + "_grad", x, dout)


def _first_grad(forward: str):
    """The forward's grad op at (X, dOut), with the double-grad op's attributes (beta, alpha, factor), FactorTensor."""

    def first_grad(f, g, x: str, dout: str) -> str:
        factor = {"FactorTensor": g.I("FactorTensor")} if g.I("FactorTensor") else {}
        return f.op(forward + "_grad", {"X": x, "Out@GRAD": dout, **factor}, x, slot="X@GRAD", same=True)

    return first_grad


def _again(first_grad, second, x_slot: str = "X"):
    """grad_out@GRAD = first_grad at dOut = ddX; X@GRAD = second(f, g, x, p), f''(x) p at p = dOut ddX (x_slot names
    X: acos_double_grad's is lower-case)."""

    def expand(f, g):
        x, dout, ddx = (first(g.I(slot)) for slot in (x_slot, "grad_out", "grad_x@GRAD"))
        return {"grad_out@GRAD": first_grad(f, g, x, ddx), f"{x_slot}@GRAD": second(f, g, x, f.mul(dout, ddx, x))}

    return expansion(expand)


# forward -> (its second-derivative op, the first grad, d/dx of the first grad times p, optional inputs, attributes)
SECOND = {"sin": ("sin_double_grad", _plain_grad("sin"), lambda f, g, x, p: _grad(f, "cos_grad", x, p), (), None),
          "cos": ("cos_double_grad", _plain_grad("cos"),
                  lambda f, g, x, p: f.scale(_grad(f, "sin_grad", x, p), -1.0), (), None),  # -cos x
          "square": ("square_grad_grad", _plain_grad("square"), lambda f, g, x, p: f.scale(p, 2.0), (), None),
          "log": ("log_grad_grad", _plain_grad("log"), _log_second, (), None),
          "softplus": ("softplus_double_grad", _first_grad("softplus"), softplus_second, (),
                       {"beta": 1.0, "threshold": 20.0}),
          "elu": ("elu_grad_grad", lambda f, g, x, dout: _elu_grad(f, x, dout), _elu_second, (), {"alpha": 1.0}),
          "celu": ("celu_grad_grad", _first_grad("celu"), celu_second, (), {"alpha": 1.0}),
          "pow": ("pow_double_grad", _first_grad("pow"), pow_second, ("FactorTensor?",), {"factor": 1.0})}

for _forward, (_type, _first, _second, _optional, _attrs) in SECOND.items():
    defgrad(_type, inputs=["X", "grad_out", "grad_x@GRAD", *_optional], outputs=["X@GRAD", "grad_out@GRAD"],
            attrs=_attrs, infer=_like(("X", "X@GRAD"), ("grad_out", "grad_out@GRAD")), grad=_again(_first, _second),
            no_grad_inputs=[slot.rstrip("?") for slot in _optional], of=_forward + "_grad")


# in Paddle's lower-case slots (x, x@GRAD); f'' = -x / (1 - x^2)^1.5
defgrad("acos_double_grad", inputs=["x", "grad_out", "grad_x@GRAD"], outputs=["x@GRAD", "grad_out@GRAD"],
        infer=_like(("x", "x@GRAD"), ("grad_out", "grad_out@GRAD")),
        grad=_again(_plain_grad("acos"), lambda f, g, x, p: _slope_over_one_minus_square(f, "acos", x, p), "x"),
        of="acos_grad")


def _by_out(forward: str, scale: float):
    """sqrt/rsqrt_grad_grad read Out and the first grad's dX (grad_x): grad_out@GRAD = the first grad at dOut = ddX;
    Out@GRAD = scale dX ddX / Out (dX is out^k dOut: d(dX)/d(out) = k dX / out, k -1 for sqrt, 3 for rsqrt)."""

    def expand(f, g):
        out, dx, ddx = (first(g.I(slot)) for slot in ("Out", "grad_x", "grad_x@GRAD"))
        return {"grad_out@GRAD": f.op(forward + "_grad", {"Out": out, "Out@GRAD": ddx}, out, slot="X@GRAD"),
                "Out@GRAD": f.scale(f.div(f.mul(dx, ddx, out), out, out), scale)}

    return expansion(expand)


for _forward, _scale in (("sqrt", -1.0), ("rsqrt", 3.0)):
    defgrad(f"{_forward}_grad_grad", inputs=["Out", "grad_x", "grad_x@GRAD"], outputs=["Out@GRAD", "grad_out@GRAD"],
            infer=lambda ctx: {"Out@GRAD": (ctx.shape("Out"), ctx.dtype("Out")),
                               "grad_out@GRAD": (ctx.shape("grad_x@GRAD"), ctx.dtype("grad_x@GRAD"))},
            grad=_by_out(_forward, _scale), of=_forward + "_grad")


def _leaky_relu_again(f, g):
    """ddX where X > 0, alpha ddX elsewhere (at 0 too, unlike leaky_relu_grad): alpha ddX + (1 - alpha) relu part."""
    x, ddx, alpha = first(g.I("X")), first(g.I("grad_x@GRAD")), g.attr("alpha")
    above = f.op("relu_grad", {"Out": x, "Out@GRAD": ddx}, x, slot="X@GRAD")
    return {"grad_out@GRAD": f.add(f.scale(ddx, alpha), f.scale(above, 1.0 - alpha), x)}


def _at_ddx(forward: str, passed: tuple[str, ...] = (), same: bool = False):
    """grad_out@GRAD = the forward's grad op at dOut = ddX (abs: sign(X) ddX; clip: ddX inside the bounds), with the
    inputs ``passed`` where given and, when ``same``, the double grad's attributes."""

    def expand(f, g):
        x, ddx = first(g.I("X")), first(g.I("grad_x@GRAD"))
        given = {slot: g.I(slot) for slot in passed if g.I(slot)}
        return {"grad_out@GRAD": f.op(forward + "_grad", {"X": x, "Out@GRAD": ddx, **given}, x, slot="X@GRAD",
                                      same=same)}

    return expand


# piecewise linear: the first grad is linear in dOut and flat in X, so only grad_out@GRAD (f'(X) ddX) is written
for _type, _forward, _expand, _optional, _attrs in (
        ("leaky_relu_grad_grad", "leaky_relu", _leaky_relu_again, (), {"alpha": 0.02}),
        ("abs_double_grad", "abs", _at_ddx("abs"), (), None),
        ("clip_double_grad", "clip", _at_ddx("clip", ("Min", "Max"), same=True), ("Min", "Max"), get("clip").attrs)):
    defgrad(_type, inputs=["X", "grad_x@GRAD", *(slot + "?" for slot in _optional)], outputs=["grad_out@GRAD"],
            attrs=_attrs, infer=lambda ctx: {"grad_out@GRAD": (ctx.shape("grad_x@GRAD"), ctx.dtype("grad_x@GRAD"))},
            grad=expansion(_expand), no_grad_inputs=["X", *_optional], of=_forward + "_grad")
