"""paddle.sparse's subtract, multiply and divide of two COO tensors, divide by a number, transpose and coalesce, which
Paddle 3.3.1 builds in PIR mode only (docs/sparse.md). Sites as Paddle's: subtract and multiply as sparse_add (x's
sites where y has the same ones, else every site of either, sorted); divide every site of the sparse dims, row-major
(x / y is 0/0 where neither has a value: NaN, as the dense quotient); divide by a number and transpose x's (transpose
renumbers them, in x's order); coalesce each site once, sorted, its entries summed. All but coalesce take two CSR
tensors (one for divide by a number and transpose) too, as Paddle's *_csr kernels: the COO result's entries made
CSR. Their gradients:

    subtract:  sparse_add(x, y scaled by -1), differentiated     divide by s: x scaled by 1/s, differentiated
    multiply:  dx = dout * y at x's sites, dy = dout * x at y's sites
    divide:    dx = dout / y at x's sites, dy = -dout * out / y at y's sites
    transpose: dx = dout transposed back                         coalesce: dx = dout at each entry's site
"""

from __future__ import annotations

from ..ir import AttrType
from ..registry import defop, grad_op, typed
from .composite import expansion, first
from .infer import check_float


def _pair_infer(ctx):
    x, y = ctx.shape("x"), ctx.shape("y")
    check_float(ctx, "x")
    if x is not None and y is not None and (len(x) != len(y) or any(a != b and min(a, b) >= 0 for a, b in zip(x, y))):
        ctx.fail(f"{ctx.op.type} needs x and y of one shape, got {x} and {y}")
    return {"out": (x, ctx.dtype("x"))}


@expansion
def _subtract_grad(f, g):
    """out = sparse_add(x, -y): the same sites, recomputed so and differentiated."""
    negated = f.op("sparse_scale", {"x": first(g.I("y"))}, first(g.I("y")), {"scale": -1.0, "bias": 0.0,
                                                                            "bias_after_scale": True}, slot="out")
    return {"out": f.op("sparse_add", {"x": first(g.I("x")), "y": negated}, first(g.I("x")), slot="out")}


def _divide_scalar_grad(g):
    """Paddle's divide_scalar of the grad (a scale by 1 / scalar would round 1 / scalar to float32)."""
    return [g.op("sparse_divide_scalar", {"x": g.OG("out")}, {"out": g.IG("x")}, {"scalar": g.attr("scalar")})]


def _same_as_x(ctx):
    check_float(ctx, "x")
    return {"out": (ctx.shape("x"), ctx.dtype("x"))}


def _divide_scalar_infer(ctx):
    if ctx.attr("scalar") == 0:
        ctx.fail("sparse_divide_scalar by 0")
    return _same_as_x(ctx)


def _transpose_infer(ctx):
    x, perm = ctx.shape("x"), list(ctx.attr("perm"))
    if x is not None and sorted(perm) != list(range(len(x))):
        ctx.fail(f"sparse_transpose needs a permutation of x's {len(x)} dims, got perm {perm}")
    return {"out": (None if x is None else [x[p] for p in perm], ctx.dtype("x"))}


defop("sparse_subtract", ["x", "y"], ["out"], infer=_pair_infer, grad=_subtract_grad)
defop("sparse_multiply", ["x", "y"], ["out"], infer=_pair_infer, grad=grad_op("x", "y"))
defop("sparse_divide", ["x", "y"], ["out"], infer=_pair_infer, grad=grad_op("x", "y", "out"))
defop("sparse_divide_scalar", ["x"], ["out"], attrs={"scalar": typed(1.0, AttrType.FLOAT)},
      infer=_divide_scalar_infer, grad=_divide_scalar_grad)
defop("sparse_transpose", ["x"], ["out"], attrs={"perm": typed([], AttrType.INTS)}, infer=_transpose_infer,
      grad=grad_op())
defop("sparse_coalesce", ["x"], ["out"], infer=_same_as_x, grad=grad_op("x"))
