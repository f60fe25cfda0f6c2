"""Second derivatives of cumprod: cumprod_grad's maker, composite (gradc.ops.composite) so third derivatives
follow. As reduce_prod's (math_double), the forward is written again with differentiable ops that never divide,
its backward emitted by ``differentiate``, and both differentiated again (``expansion``): zeros in X are no
special case at any order; a complex X's neither (the products' grads conjugate as Paddle's kernel). Along a dim
of unknown size (the scan needs n) the maker emits cumprod_grad_grad instead, the grad along a list of directions
on nested duals, which every later order emits again with one more (gradc.ops.product_directions).
"""

from __future__ import annotations

from ..registry import defgrad
from . import cumprod  # noqa: F401  (registers cumprod_grad)
from .composite import differentiate, expansion, first
from .product_directions import along_one_more_direction


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


def _cumprod_grad(g):
    """By the scan where the dim's size is known (a complex X too: the products' grads conjugate as the kernel's),
    else by cumprod_grad_grad along ddX (gradc.ops.product_directions), exact on duals."""
    x = first(g.I("X"))
    shape = g.shape(x)
    if shape is not None and (not shape or shape[g.attr("dim") % len(shape)] >= 0):
        return _cumprod_grad_known(g)
    return along_one_more_direction(g)


defgrad("cumprod_grad", grad=_cumprod_grad, no_grad_inputs=["Out"])   # gradc's kernel reads X, not Out
