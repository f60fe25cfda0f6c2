"""paddle.sparse.nn.MaxPool3D (sparse_maxpool, the legacy OpProto's slots and attributes), which neither of Paddle
3.3.1's static modes builds (docs/sparse.md): Paddle's MaxPoolCooKernel, each output site's channels the maximum of
the input entries its pooling window holds, the output sites those of a plain sparse conv with kernel_sizes (sorted,
row-major), the rulebook and counter as sparse_conv3d writes them. Its gradient sends dout[o] to every entry of o's
window holding the maximum (all of them on a tie, as Paddle's); sparse_maxpool_grad (x, rulebook, counter, out,
out@GRAD: sparse_backward.yaml's slots) is linear in out@GRAD and flat in x and out (the maxima move with x only
where they tie), so its derivative is its adjoint: gradc's own sparse_maxpool_grad_grad (Paddle has none; the slots
of its yaml double grads) gives grad_out_grad[o] = the sum of grad_x_grad over o's maxima, and is differentiated by
sparse_maxpool_grad again."""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import defgrad, defop, grad_op, typed
from .composite import Formula, first
from .infer import check_float

INTS = AttrType.INTS


def _maxpool_infer(ctx):
    x = ctx.shape("x")
    check_float(ctx, "x")
    attrs = {name: list(ctx.attr(name)) for name in ("kernel_sizes", "paddings", "dilations", "strides")}
    if any(len(value) != 3 for value in attrs.values()):
        ctx.fail(f"sparse_maxpool needs 3 kernel_sizes, paddings, dilations and strides, got {attrs}")
    if min(attrs["kernel_sizes"] + attrs["strides"] + attrs["dilations"]) < 1 or min(attrs["paddings"]) < 0:
        ctx.fail(f"sparse_maxpool needs kernel_sizes, strides and dilations >= 1 and paddings >= 0, got {attrs}")
    rules = {"rulebook": (None, VarType.INT32), "counter": (None, VarType.INT32)}
    if x is None:
        return {"out": (None, ctx.dtype("x")), **rules}
    if len(x) != 5:
        ctx.fail(f"sparse_maxpool needs x [N, D, H, W, C], got {x}")
    dims = [(d + 2 * p - dl * (k - 1) - 1) // s + 1 if d >= 0 else -1 for d, k, s, p, dl in zip(
        x[1:4], attrs["kernel_sizes"], attrs["strides"], attrs["paddings"], attrs["dilations"])]
    if any(d == 0 or d < -1 for d in dims):
        ctx.fail(f"sparse_maxpool leaves no output site: input {x}, {attrs}")
    return {"out": ([x[0], *dims, x[4]], ctx.dtype("x")), **rules}


RULES = ("x", "rulebook", "counter", "out")


def _grad_grad(g):
    """d/d(out@GRAD) of sparse_maxpool_grad: grad_out_grad from its grad_x_grad (none for x and out)."""
    f, ddx = Formula(g), first(g.OG("x@GRAD"))
    if ddx is not None:
        f.into(first(g.IG("out@GRAD")), "sparse_maxpool_grad_grad", {**{s: g.I(s) for s in RULES},
                                                                     "grad_x_grad": ddx}, slot="grad_out_grad")
    return f.ops


def _grad_grad_grad(g):
    """sparse_maxpool_grad_grad is sparse_maxpool_grad's adjoint, and so the other way round."""
    f, dd = Formula(g), first(g.OG("grad_out_grad"))
    if dd is not None:
        f.into(first(g.IG("grad_x_grad")), "sparse_maxpool_grad", {**{s: g.I(s) for s in RULES}, "out@GRAD": dd},
               slot="x@GRAD")
    return f.ops


defop("sparse_maxpool", ["x"], ["out", "rulebook", "counter"],
      attrs={name: typed([], INTS) for name in ("kernel_sizes", "paddings", "dilations", "strides")},
      infer=_maxpool_infer, no_grad_outputs=["rulebook", "counter"],
      grad=grad_op("x", "rulebook", "counter", "out"))
defgrad("sparse_maxpool_grad", grad=_grad_grad, no_grad_inputs=list(RULES))
defgrad("sparse_maxpool_grad_grad", inputs=[*RULES, "grad_x_grad"], outputs=["grad_out_grad"],
        of="sparse_maxpool_grad", grad=_grad_grad_grad, no_grad_inputs=list(RULES),
        infer=lambda ctx: {"grad_out_grad": (ctx.shape("out"), ctx.dtype("out"))})
