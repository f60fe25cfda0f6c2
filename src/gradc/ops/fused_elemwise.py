"""The elementwise-activation fusions BuildStrategy's fuse_elewise_add_act_ops pass writes into a training program
(fused_elemwise_add_activation) and the general op it shares kernels with (fused_elemwise_activation), and their
grad ops, as Paddle 3.3.1's CPU kernels compute them.

functor_list names two functors. A binary one first (elementwise_add, elementwise_mul) means
Out = Binary(X, Unary(Y)) with IntermediateOut = Unary(Y); a unary one first (scale, relu, tanh, sigmoid, gelu: its tanh
approximation) means Out = Unary(Binary(X, Y)) with IntermediateOut = Binary(X, Y). Y lines up with X from ``axis``
as in elementwise_*; ``scale`` is the scale functor's factor. Paddle implements nine pairs (COMPOUNDS); the grad op
reads IntermediateOut when save_intermediate_out, else recomputes it. Second derivatives:
gradc.ops.fused_elemwise_double.
"""

from __future__ import annotations

from ..ir import AttrType
from ..registry import defop, grad_op, grads_like_inputs, typed
from .infer import check_float, one_dtype

BINARY = ("elementwise_add", "elementwise_mul")
# the (first, second) functor pairs Paddle's RunFunctors implements, forward and grad
COMPOUNDS = (("elementwise_add", "scale"), ("scale", "elementwise_add"), ("elementwise_add", "relu"),
             ("relu", "elementwise_add"), ("elementwise_mul", "scale"), ("tanh", "elementwise_add"),
             ("elementwise_mul", "tanh"), ("elementwise_mul", "sigmoid"), ("gelu", "elementwise_add"))
ELEMWISE_ATTRS = {"functor_list": typed([], AttrType.STRINGS), "axis": -1, "scale": 0.0, "save_intermediate_out": False}
FUSED_ELEMWISE = ("fused_elemwise_activation", "fused_elemwise_add_activation")


def compound(ctx) -> tuple[str, str]:
    """The op's (first, second) functors, failing unless Paddle implements the pair; the add variant wants an
    elementwise_add in it."""
    functors = tuple(ctx.attr("functor_list"))
    if functors not in COMPOUNDS:
        ctx.fail(f"functor_list {list(functors)} is not one Paddle implements: "
                 f"{', '.join(','.join(pair) for pair in COMPOUNDS)}")
    if ctx.op.type.startswith("fused_elemwise_add") and "elementwise_add" not in functors:
        ctx.fail(f"functor_list {list(functors)} must hold elementwise_add")
    return functors


def _elemwise_infer(ctx):
    check_float(ctx, "X")
    dtype = one_dtype(ctx, "X", "Y")
    binary_first = compound(ctx)[0] in BINARY
    x, y = ctx.shape("X"), ctx.shape("Y")
    if x is not None and y is not None and len(y) > len(x):
        ctx.fail(f"Y {y} must not have more dims than X {x}")
    return {"Out": (x, dtype), "IntermediateOut": (y if binary_first else x, dtype)}


# fuse_elewise_add_act_pass leaves the add variant's grad op without X (and Out or IntermediateOut): optional there
# (registered here ahead of the forward op; gradc.ops.fused_elemwise_double names it the forward's grad op)
defop("fused_elemwise_add_activation_grad", ["X?", "Y", "Out?", "IntermediateOut?", "Out@GRAD"], ["X@GRAD?", "Y@GRAD?"],
      attrs=ELEMWISE_ATTRS, infer=grads_like_inputs)
for _type in FUSED_ELEMWISE:
    defop(_type, ["X", "Y"], ["Out", "IntermediateOut"], attrs=ELEMWISE_ATTRS, infer=_elemwise_infer,
          no_grad_outputs=["IntermediateOut"], grad=grad_op("X", "Y", "Out", "IntermediateOut"))
