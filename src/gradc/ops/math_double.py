"""Second derivatives of arithmetic: makers for the grad ops of gradc.ops.math and gradc.ops.reduce, all
composite (gradc.ops.composite), so the ops they emit have makers of their own and third derivatives
follow. ``ddX`` is the grad of the grad op's output X@GRAD.

Paddle's makers emit elementwise_{add,sub,mul,div}_grad_grad and matmul_v2_grad_grad; gradc writes the same
derivatives with forward ops and first-order grad ops, which Paddle runs too.
"""

from __future__ import annotations

from math import prod

from ..ir import EMPTY_VAR
from ..registry import defgrad
from . import math, reduce  # noqa: F401  (register the grad ops given makers here)
from .complex_inputs import is_complex
from .composite import Formula, bilinear, differentiate, expansion, first, linear
from .directional_double import along_one_more_direction
from .reduced_dims import reduced_dims_back

for _name in ("elementwise_mul", "mul", "matmul_v2", "matmul", "bmm"):
    defgrad(f"{_name}_grad", grad=bilinear(_name))


def _sum_or_difference(forward: str):
    """X@GRAD and Y@GRAD are dOut summed down to X and Y: linear in dOut, so d/d(dOut) = ddX +- ddY
    broadcast (zeros for one nobody computed)."""

    def maker(g):
        f = Formula(g)
        ddx, ddy = (first(g.OG(s + "@GRAD")) or f.fill_like(first(g.I(s)), 0.0) for s in ("X", "Y"))
        f.into(first(g.IG("Out@GRAD")), forward, {"X": ddx, "Y": ddy}, same=True)
        return f.ops

    return maker


for _name in ("elementwise_add", "elementwise_sub"):
    defgrad(f"{_name}_grad", grad=_sum_or_difference(_name), no_grad_inputs=["X", "Y"])


def summed_to(f, operand: str, slot: str, value: str, axis: int) -> str:
    """``value`` (shaped like the output) summed down to ``operand``, the ``slot`` ("X" or "Y") input of a
    broadcasting elementwise op: elementwise_add_grad with ``value`` standing in for the other operand."""
    other = "Y" if slot == "X" else "X"
    return f.op("elementwise_add_grad", {slot: operand, other: value, "Out@GRAD": value}, operand,
                {"axis": axis}, slot=slot + "@GRAD")


@expansion
def _div_grad(f, g):
    """X@GRAD = dOut / conj(y) and Y@GRAD = -dOut conj(x) / conj(y)^2 (as the kernel: conj only of a complex
    operand), summed down to X and Y; a real Y's grad of complex values is their real part."""
    x, y, dout, axis = first(g.I("X")), first(g.I("Y")), first(g.I("Out@GRAD")), g.attr("axis")
    cx, cy = (f.unary("conj", v) if is_complex(g, v) else v for v in (x, y))
    quotient = f.div(dout, cy, dout, axis)
    grads = {}
    if g.O("X@GRAD"):
        grads["X@GRAD"] = summed_to(f, x, "X", quotient, axis)
    if g.O("Y@GRAD"):
        minus = f.scale(f.div(f.mul(quotient, cx, dout, axis), cy, dout, axis), -1.0)
        if is_complex(g, dout) and not is_complex(g, y):
            minus = f.op("real", {"X": minus}, y, dims=lambda s: g.shape(dout))
        grads["Y@GRAD"] = summed_to(f, y, "Y", minus, axis)
    return grads


defgrad("elementwise_div_grad", grad=_div_grad, no_grad_inputs=["Out"])   # gradc's kernel reads X, not Out


@expansion
def _pow_grad(f, g):
    """X@GRAD = dOut y x^(y-1) and Y@GRAD = dOut x^y log x (x > 0), summed down to X and Y."""
    x, y, dout, axis = first(g.I("X")), first(g.I("Y")), first(g.I("Out@GRAD")), g.attr("axis")
    grads = {}
    if g.O("X@GRAD"):
        power = f.op("elementwise_pow", {"X": x, "Y": f.scale(y, 1.0, -1.0)}, dout, {"axis": axis})
        grads["X@GRAD"] = summed_to(f, x, "X", f.mul(f.mul(dout, power, dout), y, dout, axis), axis)
    if g.O("Y@GRAD"):
        power = f.op("elementwise_pow", {"X": x, "Y": y}, dout, {"axis": axis})
        grads["Y@GRAD"] = summed_to(f, y, "Y", f.mul(f.mul(dout, power, dout), f.unary("log", x), dout, axis), axis)
    return grads


defgrad("elementwise_pow_grad", grad=_pow_grad)


def _select(first_wins: str, second_wins: str):
    """max/min: dOut goes to X where ``first_wins`` compares X against Y, to Y where ``second_wins`` does, and in
    halves to both at a tie (as the grad kernel); flat in X and Y, so d/d(dOut) = where(X wins, ddX, where(Y wins,
    ddY, (ddX + ddY) / 2)), each broadcast to dOut's shape."""

    def maker(g):
        wanted = first(g.IG("Out@GRAD"))
        if wanted == EMPTY_VAR:
            return []
        f = Formula(g)
        x, y, dout, axis = first(g.I("X")), first(g.I("Y")), first(g.I("Out@GRAD")), g.attr("axis")
        zeros = f.fill_like(dout, 0.0)
        ddx, ddy = first(g.OG("X@GRAD")), first(g.OG("Y@GRAD"))
        from_x = f.add(ddx, zeros, dout, axis) if ddx else zeros
        from_y = f.add(zeros, ddy, dout, axis) if ddy else zeros
        tie = f.scale(f.add(from_x, from_y, dout), 0.5)
        y_side = f.op("where", {"Condition": f.op(second_wins, {"X": x, "Y": y}, dout, {"axis": axis}),
                                "X": from_y, "Y": tie}, dout)
        f.into(wanted, "where", {"Condition": f.op(first_wins, {"X": x, "Y": y}, dout, {"axis": axis}),
                                 "X": from_x, "Y": y_side})
        return f.ops

    return maker


defgrad("elementwise_max_grad", grad=_select("greater_than", "less_than"), no_grad_inputs=["X", "Y"])
defgrad("elementwise_min_grad", grad=_select("less_than", "greater_than"), no_grad_inputs=["X", "Y"])


def _where_double(g):
    """where_grad splits dOut by the condition: d/d(dOut) = where(Condition, ddX, ddY)."""
    if first(g.IG("Out@GRAD")) == EMPTY_VAR:
        return []
    f = Formula(g)
    dout = first(g.I("Out@GRAD"))
    ddx, ddy = (first(g.OG(s + "@GRAD")) or f.fill_like(first(g.I(s)), 0.0) for s in ("X", "Y"))
    f.into(first(g.IG("Out@GRAD")), "where", {"Condition": g.I("Condition"),
                                               "X": f.add(ddx, f.fill_like(dout, 0.0), dout),
                                               "Y": f.add(ddy, f.fill_like(dout, 0.0), dout)})
    return f.ops


defgrad("where_grad", grad=_where_double, no_grad_inputs=["Condition", "X", "Y"])

# Reductions: mean and sum spread dOut evenly, so d/d(dOut) reduces ddX the same way.
defgrad("mean_grad", grad=linear("mean"), no_grad_inputs=["X"])
for _name in ("reduce_sum", "reduce_mean"):
    defgrad(f"{_name}_grad", grad=linear(_name), no_grad_inputs=["X"])


def _extreme(g):
    """reduce_max/min/amax/amin share dOut among the elements equal to Out: d/d(dOut) sums ddX over those, each
    weighed by its share (the grad op's own output for dOut = 1)."""
    wanted = first(g.IG("Out@GRAD"))
    if wanted == EMPTY_VAR:
        return []
    f = Formula(g)
    x, out, dout = first(g.I("X")), first(g.I("Out")), first(g.I("Out@GRAD"))
    mask = f.op(g.fwd.type, {"X": x, "Out": out, "Out@GRAD": f.fill_like(dout, 1.0)}, x, slot="X@GRAD", same=True)
    f.into(wanted, "reduce_sum", {"X": f.mul(first(g.OG("X@GRAD")), mask, x)}, same=True)
    return f.ops


for _name in ("reduce_max", "reduce_min", "reduce_amax", "reduce_amin"):
    defgrad(f"{_name}_grad", grad=_extreme, no_grad_inputs=["X", "Out"])


def _logsumexp_again(f, g):
    """X@GRAD = dOut exp(X - Out), Out and dOut given back the reduced dims (as 1s), in differentiable ops: the maker
    differentiates this (Out an input of its own, as in the grad op)."""
    x, out, dout = first(g.I("X")), first(g.I("Out")), first(g.I("Out@GRAD"))

    def kept(v):
        return reduced_dims_back(f, g, v, x, reduce.as_reduce_attrs(g.attr))
    return {"X@GRAD": f.mul(kept(dout), f.unary("exp", f.sub(x, kept(out), x)), x)}


defgrad("logsumexp_grad", grad=expansion(_logsumexp_again))


def _remainder(g):
    """remainder_grad (elementwise_mod's): X@GRAD = dOut, Y@GRAD = -floor(x / y) dOut, each summed down; flat in
    X and Y away from the jumps, so d/d(dOut) = ddX - floor(x / y) ddY, each broadcast to dOut's shape."""
    wanted = first(g.IG("Out@GRAD"))
    if wanted == EMPTY_VAR:
        return []
    f = Formula(g)
    x, y, dout, axis = first(g.I("X")), first(g.I("Y")), first(g.I("Out@GRAD")), g.attr("axis")
    ddx, ddy = first(g.OG("X@GRAD")), first(g.OG("Y@GRAD"))
    if ddx is not None:
        f.into(wanted, "elementwise_add", {"X": f.fill_like(dout, 0.0), "Y": ddx}, {"axis": axis})
    if ddy is not None:
        quotient = f.op("elementwise_floordiv", {"X": x, "Y": y}, dout, {"axis": axis})
        f.into(wanted, "scale", {"X": f.mul(quotient, ddy, dout, axis)}, {"scale": -1.0})
    return f.ops


defgrad("remainder_grad", grad=_remainder, no_grad_inputs=["X", "Y"])


def _bilinear_tensor_product(g):
    """Out = F(x, w, y) + bias, F linear in each: the grad op G gives G_X(d, w, y), G_Y(d, w, x), G_W(d, x, y) and
    the batch sum of d, each <dd*, G_*> = <d, F(...)> with the dd in its operand's place, so
        d/d(dOut) = F(ddX, w, y) + F(x, w, ddY) + F(x, ddW, y) + ddBias,   d/dX = G_X(d, w, ddY) + G_X(d, ddW, y),
        d/dY = G_Y(d, w, ddX) + G_Y(d, ddW, x),   d/dW = G_W(d, ddX, y) + G_W(d, x, ddY)."""
    f = Formula(g)
    given = {slot: first(g.I(slot)) for slot in ("X", "Y", "Weight")}
    dout = first(g.I("Out@GRAD"))
    dd = {slot: first(g.OG(slot + "@GRAD")) for slot in ("X", "Y", "Weight", "Bias")}
    for swapped in ("X", "Y", "Weight"):
        if dd[swapped] is None:
            continue
        operands = {**given, swapped: dd[swapped]}
        f.into(first(g.IG("Out@GRAD")), "bilinear_tensor_product", operands)
        for other in ("X", "Y", "Weight"):
            if other != swapped:
                f.into(first(g.IG(other)), g.fwd.type, {**operands, "Out@GRAD": dout}, slot=other + "@GRAD")
    if dd["Bias"] is not None:
        f.into(first(g.IG("Out@GRAD")), "elementwise_add", {"X": f.fill_like(dout, 0.0), "Y": dd["Bias"]})
    return f.ops


defgrad("bilinear_tensor_product_grad", grad=_bilinear_tensor_product)


def _pairwise_product(f, g, x: str) -> str:
    """reduce_prod of ``x`` written with differentiable ops, exact at zeros: the reduced dims moved last and
    flattened, then halved log2(n) times by multiplying the even and odd positions (an odd last one carried). The
    positions are picked by reshaping pairs into a dim of 2 and slicing it, ops whose grads take complex values."""
    shape = g.shape(x)
    rank = len(shape)
    reduced = list(range(rank)) if g.attr("reduce_all") or not g.attr("dim") else \
        sorted({d % rank for d in g.attr("dim")})
    kept = [d for d in range(rank) if d not in reduced]
    count = prod(shape[d] for d in reduced)
    row = x
    if kept + reduced != list(range(rank)):
        row = f.op("transpose2", {"X": x}, x, {"axis": kept + reduced}, more={"XShape": f.xshape(x)},
                   dims=lambda s: [s[d] for d in kept + reduced])
    last = len(kept)

    def reshaped(value: str, sizes: list[int]) -> str:
        """``value`` with its kept dims as they are (0: copied at run time) and its last ones ``sizes``."""
        return f.op("reshape2", {"X": value}, value, {"shape": [0] * last + sizes}, more={"XShape": f.xshape(value)},
                    dims=lambda s: s[:last] + sizes)

    row = reshaped(row, [count])
    while count > 1:
        half = count // 2
        pairs = reshaped(f.slice(row, last, 0, 2 * half), [half, 2])
        even = f.slice(pairs, last + 1, 0, 1)
        product = reshaped(f.mul(even, f.slice(pairs, last + 1, 1, 2), even), [half])
        if count % 2:
            product = f.op("concat", {"X": [product, f.slice(row, last, count - 1, count)]}, row, {"axis": last},
                           dims=lambda s, n=half + 1: s[:-1] + [n])
        row, count = product, half + count % 2
    return row


def _reduced_known(g, x: str) -> bool:
    shape = g.shape(x)
    if shape is None:
        return False
    dims = range(len(shape)) if g.attr("reduce_all") or not g.attr("dim") else g.attr("dim")
    return all(shape[d % len(shape)] >= 0 for d in dims) if shape else True


def _reduce_prod_grad(g):
    """By the pairwise product where the reduced dims' sizes are known (a complex X too: the products' grads
    conjugate as the kernel's), else by reduce_prod_grad_grad along ddX (gradc.ops.product_directions), exact on
    duals."""
    x = first(g.I("X"))
    if _reduced_known(g, x):
        return _reduce_prod_grad_known(g)
    return along_one_more_direction(g)


@expansion
def _reduce_prod_grad_known(f, g):
    """X@GRAD = dOut times the product of the other elements: the backward of the pairwise product, emitted by
    ``differentiate`` (no division, so zeros are no special case)."""
    x = first(g.I("X"))
    if not g.shape(x):   # a 0-d X is its own product: X@GRAD is dOut
        return {"X@GRAD": f.shaped_like(first(g.I("Out@GRAD")), x)}
    total = _pairwise_product(f, g, x)
    grad = g.tmp(x)
    f.ops.extend(differentiate(g, list(f.ops), {total: f.shaped_like(first(g.I("Out@GRAD")), total)}, {x: grad}))
    return {"X@GRAD": grad}


defgrad("reduce_prod_grad", grad=_reduce_prod_grad, no_grad_inputs=["Out"])
