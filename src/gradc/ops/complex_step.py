"""Second derivatives by a complex step, for grad ops whose outputs are polynomials in their inputs (products of
run-time groups of factors) where the makers' real scans need sizes known only at run time: the derivative of p
along dd is Im(p(v + i h dd)) / h, exact to rounding for h = 2^-40 (the error is h^2 times the third-order terms,
and no difference cancels). The kernels take the complex values as they are (no conjugates, no division by a
factor), so zeros need no care. The ops stepped read complex values, so a third backward refuses them by name, but
for cumprod_grad, differentiated at its complex point by exact tangents (gradc.ops.cumprod_double).
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, VarType
from .composite import Formula, first

STEP = 2.0 ** -40
COMPLEX_OF = {VarType.FP32: VarType.COMPLEX64, VarType.FP64: VarType.COMPLEX128}


def complex_type(g, var: str) -> int:
    return COMPLEX_OF[g.block.find_var(var).dtype]


def stepped(f: Formula, g, v: str, dd: str | None, step: float = STEP) -> str:
    """v + i step dd (v + 0i where nobody computed dd), complex."""
    along = f.op("scale", {"X": dd}, v, {"scale": step, "bias": 0.0}) if dd else f.fill_like(v, 0.0)
    return f.op("complex", {"X": v, "Y": along}, v, dtype=complex_type(g, v))


def into_slope(f: Formula, moved: str, like: str, wanted: str) -> None:
    """``wanted`` = Im(moved) / h."""
    f.into(wanted, "scale", {"X": f.op("imag", {"X": moved}, like)}, {"scale": 1.0 / STEP})


def unary_polynomial(forward: str, x_slot: str = "X", out_slot: str = "Out", conjugates: bool = False):
    """The maker of ``forward``'s grad op G(X, Out, dOut) = J(X)^T dOut, J polynomial in X: d/d(dOut) = the forward's
    tangent Im(forward(X + i h ddX)) / h, d/dX = Im(G(X + i h ddX, Out, dOut + 0i)) / h. A grad kernel that
    ``conjugates`` complex factors (as Paddle's does) computes J(conj X)^T dOut, so it is stepped at X - i h ddX: the
    program gives the same numbers in Paddle's executor as in gradc's."""

    def maker(g):
        f = Formula(g)
        x, dout = first(g.I(x_slot)), first(g.I(out_slot + "@GRAD"))
        ddx, moved = first(g.OG(x_slot + "@GRAD")), {}

        def moved_x(step: float) -> str:
            if step not in moved:
                moved[step] = stepped(f, g, x, ddx, step)
            return moved[step]

        wanted = first(g.IG(out_slot + "@GRAD"))
        if wanted not in (None, EMPTY_VAR):
            tangent = f.op(forward, {x_slot: moved_x(STEP)}, dout, slot=out_slot, same=True, dtype=complex_type(g, x))
            into_slope(f, tangent, dout, wanted)
        wanted = first(g.IG(x_slot))
        if wanted not in (None, EMPTY_VAR):
            values = {slot: g.I(slot) for slot in g.opdef.inputs if slot not in (x_slot, out_slot + "@GRAD")}
            at = moved_x(-STEP if conjugates else STEP)
            if out_slot in values:   # the moved X's own Out: Paddle's kernels read it in X's complex dtype
                values[out_slot] = [f.op(forward, {x_slot: at}, dout, slot=out_slot, same=True,
                                         dtype=complex_type(g, x))]
            curved = f.op(g.fwd.type, {**values, x_slot: at, out_slot + "@GRAD": stepped(f, g, dout, None)}, x,
                          slot=x_slot + "@GRAD", same=True, dtype=complex_type(g, x))
            into_slope(f, curved, x, wanted)
        return f.ops

    return maker
