"""paddle.sparse.nn.MaxPool3D (sparse_maxpool, the legacy OpProto's slots and attributes), which neither of Paddle
3.3.1's static modes builds (docs/sparse.md): Paddle's MaxPoolCooKernel, each output site's channels the maximum of
the input entries its pooling window holds, the output sites those of a plain sparse conv with kernel_sizes (sorted,
row-major), the rulebook and counter as sparse_conv3d writes them. Its gradient sends dout[o] to every entry of o's
window holding the maximum (all of them on a tie, as Paddle's); sparse_maxpool_grad (x, rulebook, counter, out,
out@GRAD: sparse_backward.yaml's slots) has no maker of second derivatives."""

from __future__ import annotations

from ..errors import GradError
from ..ir import AttrType, VarType
from ..registry import defgrad, defop, grad_op, typed
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


def _refused(g):
    raise GradError("sparse_maxpool_grad: gradc does not differentiate it (a second derivative of sparse_maxpool): "
                    "no maker of second derivatives yet")


defop("sparse_maxpool", ["x"], ["out", "rulebook", "counter"],
      attrs={name: typed([], INTS) for name in ("kernel_sizes", "paddings", "dilations", "strides")},
      infer=_maxpool_infer, no_grad_outputs=["rulebook", "counter"],
      grad=grad_op("x", "rulebook", "counter", "out"))
defgrad("sparse_maxpool_grad", grad=_refused, no_grad_inputs=["rulebook", "counter"])
