"""broadcast_tensors (every input broadcast to their common shape; each grad sums back to its input's shape)
and index_put (x with the entries that `indices` pick set to, or with accumulate increased by, value broadcast
to them; x's grad is zero at the set entries unless accumulate, value's grad gathers the picked entries)."""

from __future__ import annotations

from ..ir import VarType
from ..registry import defop, grad_op
from ..shapes import broadcast_dims
from .infer import same_as


def _broadcast_tensors_infer(ctx):
    shapes = ctx.shapes("X")
    if not shapes:
        ctx.fail("broadcast_tensors needs at least one input in X")
    common = shapes[0]
    for shape in shapes[1:]:
        common = broadcast_dims(common, shape, -1, ctx.fail)
    return {"Out": [(common, ctx.dtype("X", i)) for i in range(len(shapes))]}


defop("broadcast_tensors", ["X[]"], ["Out[]"], infer=_broadcast_tensors_infer, grad=grad_op("X"))

INDEX_TYPES = (VarType.INT32, VarType.INT64, VarType.BOOL)


def _index_put_infer(ctx):
    x, count = ctx.shape("x"), len(ctx.op.input("indices"))
    if count == 0 or count > len(x):
        ctx.fail(f"index_put needs 1 to {len(x)} index tensors for x of rank {len(x)}, got {count}")
    dtypes = [ctx.dtype("indices", i) for i in range(count)]
    if any(d not in INDEX_TYPES for d in dtypes) or (VarType.BOOL in dtypes and count > 1):
        ctx.fail("index_put indices must be int32/int64 tensors, or one bool mask")
    if dtypes[0] == VarType.BOOL:
        mask = ctx.shape("indices")
        if len(mask) > len(x) or any(m >= 0 and d >= 0 and m != d for m, d in zip(mask, x)):
            ctx.fail(f"index_put's bool mask {mask} must match the leading dims of x {x}")
    else:
        picked = ctx.shape("indices")
        for shape in ctx.shapes("indices")[1:]:
            picked = broadcast_dims(picked, shape, -1, ctx.fail)
        target = picked + x[count:]
        if broadcast_dims(target, ctx.shape("value"), -1, ctx.fail) != target:
            ctx.fail(f"index_put's value {ctx.shape('value')} does not broadcast to the picked entries {target}")
    if ctx.dtype("value") != ctx.dtype("x"):
        ctx.fail("index_put needs value of x's dtype")
    return same_as("x", "out")(ctx)


# Paddle's index_put_grad reads x, indices, value and out@GRAD, and writes x@GRAD and value@GRAD
defop("index_put", ["x", "indices[]", "value"], ["out"], attrs={"accumulate": False}, no_grad_inputs=["indices"],
      infer=_index_put_infer, grad=grad_op("x", "indices", "value"))
