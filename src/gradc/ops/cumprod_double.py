"""Second derivatives of cumprod: cumprod_grad's maker, composite (gradc.ops.composite) so third derivatives
follow. As reduce_prod's (math_double), the forward is written again with differentiable ops that never divide,
its backward emitted by ``differentiate``, and both differentiated again (``expansion``): zeros in X are no
special case at any order. Along a dim of unknown size (the scan needs n) the second derivative is a complex step
through cumprod and cumprod_grad themselves instead, exact to rounding but not differentiated again.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from . import cumprod  # noqa: F401  (registers cumprod_grad)
from .composite import Formula, differentiate, expansion, first
from .select_double import COMPLEX_OF, STEP


def _running_product(f, g, x: str) -> str:
    """cumprod of ``x`` (rank >= 1) as a scan: round r multiplies each entry by the one 2^r before it (ones
    before the start), so after ceil(log2 n) rounds entry i holds x_0 ... x_i. Exclusive shifts x by one first;
    reversed, "before" is "after"."""
    shape = g.shape(x)
    axis = g.attr("dim") % len(shape)
    n = shape[axis]
    reverse = g.attr("reverse")

    def shifted(value: str, by: int) -> str:
        """``value`` moved ``by`` places along the product's direction, the places it leaves filled with ones."""
        if by >= n:
            return f.scale(value, 0.0, 1.0)   # all ones, and still a function of value (with grad 0)
        kept = [by, n] if reverse else [0, n - by]
        cut = f.slice(value, axis, *kept)
        paddings = [0] * (2 * len(shape))
        paddings[2 * axis + reverse] = by
        return f.op("pad", {"X": cut}, value, {"paddings": paddings, "pad_value": 1.0})

    product = shifted(x, 1) if g.attr("exclusive") else x
    step = 1
    while step < n:
        product = f.mul(product, shifted(product, step), x)
        step *= 2
    return product


@expansion
def _cumprod_grad_known(f, g):
    """X@GRAD = the backward of the running product seeded with dOut (a 0-d X runs as [1])."""
    x, dout = first(g.I("X")), first(g.I("Out@GRAD"))
    row = x if g.shape(x) else f.op("reshape2", {"X": x}, x, {"shape": [1]}, more={"XShape": f.xshape(x)},
                                     dims=lambda s: [1])
    product = _running_product(f, g, row)
    grad = g.tmp(x)
    f.ops.extend(differentiate(g, list(f.ops), {product: f.shaped_like(dout, product)}, {x: grad}))
    return {"X@GRAD": grad}


def _cumprod_grad_stepped(g):
    """cumprod_grad along a dim of unknown size: its outputs are polynomials in X (linear in dOut), so each derivative
    along ddX is a complex step, Im(the op at X + i h ddX) / h with h = 2^-40, exact to rounding (the error is h^2
    times third-order terms): d/d(dOut) is cumprod's tangent, d/dX cumprod_grad's (its kernel divides by nothing, so
    zeros need no care). The third derivative is refused (a grad op reading complex values)."""
    f = Formula(g)
    x, dout = first(g.I("X")), first(g.I("Out@GRAD"))
    complex_type = COMPLEX_OF[g.block.find_var(x).dtype]
    ddx = first(g.OG("X@GRAD"))
    along = f.op("scale", {"X": ddx}, x, {"scale": STEP, "bias": 0.0}) if ddx else f.fill_like(x, 0.0)
    stepped = f.op("complex", {"X": x, "Y": along}, x, dtype=complex_type)
    for wanted, type, inputs, slot in (
            (first(g.IG("Out@GRAD")), "cumprod", {"X": stepped}, "Out"),
            (first(g.IG("X")), "cumprod_grad", {"X": stepped, "Out": g.I("Out"), "Out@GRAD": f.op(
                "complex", {"X": dout, "Y": f.fill_like(dout, 0.0)}, dout, dtype=complex_type)}, "X@GRAD")):
        if wanted not in (None, EMPTY_VAR):
            moved = f.op(type, inputs, x, slot=slot, same=True, dtype=complex_type)
            f.into(wanted, "scale", {"X": f.op("imag", {"X": moved}, x)}, {"scale": 1.0 / STEP})
    return f.ops


def _cumprod_grad(g):
    """By the scan where the dim's size is known, else by a complex step."""
    x = first(g.I("X"))
    shape = g.shape(x)
    known = shape is not None and (not shape or shape[g.attr("dim") % len(shape)] >= 0)
    return _cumprod_grad_known(g) if known else _cumprod_grad_stepped(g)


defgrad("cumprod_grad", grad=_cumprod_grad, no_grad_inputs=["Out"])   # gradc's kernel reads X, not Out
