"""Second derivatives of gradc.ops.binary_math: makers for its grad ops, written with differentiable ops
(gradc.ops.composite) so third derivatives follow. Paddle 3.3.1 has no double grads for these ops.

Each grad op's computation is written again (``expansion``) and differentiated; ``summed_to`` sums a value
shaped like dOut down to an operand, as the grad kernels do.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import defgrad
from . import binary_math  # noqa: F401  (register the grad ops given makers here)
from .composite import Formula, expansion, first
from .math_double import summed_to


def _written(g, makers: dict) -> dict:
    """{slot: make()} for the grads the grad op writes (the others are not computed again)."""
    return {slot: make() for slot, make in makers.items() if g.O(slot)}


@expansion
def _atan2_again(f, g):
    """X1@GRAD = dOut x2 / (x1^2 + x2^2), X2@GRAD = -dOut x1 / (x1^2 + x2^2), each summed down."""
    x1, x2, dout = first(g.I("X1")), first(g.I("X2")), first(g.I("Out@GRAD"))
    scaled = f.div(dout, f.add(f.mul(x1, x1, x1), f.mul(x2, x2, x2), dout), dout)
    return _written(g, {"X1@GRAD": lambda: summed_to(f, x1, "X", f.mul(scaled, x2, dout), -1),
                        "X2@GRAD": lambda: summed_to(f, x2, "Y", f.scale(f.mul(scaled, x1, dout), -1.0), -1)})


def _picked(f, g, x_wins: str) -> dict:
    """dOut to X where ``x_wins`` (fmax: x >= y, fmin: x <= y) or y is NaN, to Y elsewhere, each summed down: flat
    in X and Y away from ties."""
    x, y, dout = first(g.I("X")), first(g.I("Y")), first(g.I("Out@GRAD"))
    wins = f.op("logical_or", {"X": f.op(x_wins, {"X": x, "Y": y}, dout, {"axis": -1}, dtype=VarType.BOOL),
                               "Y": f.op("isnan_v2", {"X": y}, y, dtype=VarType.BOOL)}, dout, dtype=VarType.BOOL)
    zeros = f.fill_like(dout, 0.0)
    return _written(g, {
        "X@GRAD": lambda: summed_to(f, x, "X", f.op("where", {"Condition": wins, "X": dout, "Y": zeros}, dout), -1),
        "Y@GRAD": lambda: summed_to(f, y, "Y", f.op("where", {"Condition": wins, "X": zeros, "Y": dout}, dout), -1)})


@expansion
def _heaviside_again(f, g):
    """X@GRAD = 0, Y@GRAD = dOut where x == 0, summed down."""
    x, y, dout = first(g.I("X")), first(g.I("Y")), first(g.I("Out@GRAD"))
    zeros = f.fill_like(dout, 0.0)
    at_zero = f.op("equal", {"X": x, "Y": zeros}, dout, {"axis": -1}, dtype=VarType.BOOL)
    return _written(g, {
        "X@GRAD": lambda: summed_to(f, x, "X", zeros, -1),
        "Y@GRAD": lambda: summed_to(f, y, "Y", f.op("where", {"Condition": at_zero, "X": dout, "Y": zeros}, dout), -1)})


@expansion
def _copysign_again(f, g):
    """x@GRAD = dOut sign(x) (the sign of y, by its sign bit), summed down (0 at x = 0); y@GRAD = 0."""
    x, y, dout = first(g.I("x")), first(g.I("y")), first(g.I("out@GRAD"))
    sign_of_y = f.op("copysign", {"x": f.fill_like(y, 1.0), "y": y}, y, slot="out")
    return _written(g, {"x@GRAD": lambda: summed_to(f, x, "X", f.mul(dout, f.mul(f.unary("sign", x), sign_of_y, dout),
                                                                        dout), -1),
                        "y@GRAD": lambda: f.fill_like(y, 0.0)})


@expansion
def _lerp_again(f, g):
    """X@GRAD = dOut (1 - w) and Y@GRAD = dOut w, each summed down."""
    x, y, weight, dout = first(g.I("X")), first(g.I("Y")), first(g.I("Weight")), first(g.I("Out@GRAD"))
    return _written(g, {"X@GRAD": lambda: summed_to(f, x, "X", f.mul(dout, f.scale(weight, -1.0, 1.0), dout), -1),
                        "Y@GRAD": lambda: summed_to(f, y, "Y", f.mul(dout, weight, dout), -1)})


@expansion
def _masked_fill_again(f, g):
    """x@GRAD = dOut where not mask, value@GRAD = dOut where mask, each summed down."""
    x, mask, value, dout = (first(g.I(s)) for s in ("x", "mask", "value", "out@GRAD"))
    zeros = f.fill_like(dout, 0.0)
    return _written(g, {
        "x@GRAD": lambda: summed_to(f, x, "X", f.op("where", {"Condition": mask, "X": zeros, "Y": dout}, dout), -1),
        "value@GRAD": lambda: summed_to(f, value, "X", f.op("where", {"Condition": mask, "X": dout, "Y": zeros}, dout),
                                        -1)})


def _zeroed_diagonal(g):
    """fill_diagonal_tensor_grad zeroes the diagonal of dOut, a projection and its own adjoint: d/d(dOut) is the same
    op on ddX."""
    f = Formula(g)
    f.into(first(g.IG("Out@GRAD")), "fill_diagonal_tensor_grad", {"Out@GRAD": g.OG("X@GRAD")}, slot="X@GRAD",
           same=True)
    return f.ops


defgrad("atan2_grad", grad=_atan2_again)
defgrad("elementwise_fmax_grad", grad=expansion(lambda f, g: _picked(f, g, "greater_equal")))
defgrad("elementwise_fmin_grad", grad=expansion(lambda f, g: _picked(f, g, "less_equal")))
defgrad("elementwise_heaviside_grad", grad=_heaviside_again)
defgrad("copysign_grad", grad=_copysign_again)
defgrad("lerp_grad", grad=_lerp_again, no_grad_inputs=["Out"])
defgrad("masked_fill_grad", grad=_masked_fill_again, no_grad_inputs=["mask"])
defgrad("fill_diagonal_tensor_grad", grad=_zeroed_diagonal)
