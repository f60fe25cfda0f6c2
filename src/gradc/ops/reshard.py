"""Auto-parallel's change of a value's placements on process meshes (Paddle's PIR dist_op.reshard): ``reshard``
takes the block of a global value that one rank holds under the placements of its op_dist_attr's operand (src)
and gives the block it holds under those of its result (dst). gradc.executor.reshard says what each rank does.

The gradient is the reverse reshard (dst -> src) with the partial status read as replicated on both sides: the
gradient of a partial value is the whole gradient on every rank of the partial axis (a sum's parts each pass it on
whole), as gradc.ops.collective's sum over the ranks passes each rank the whole gradient.
"""

from __future__ import annotations

import json

from ..errors import GradError
from ..registry import defop

OP_DIST_ATTR = "op_dist_attr"


def _whole(tensor_dist: dict) -> dict:
    """``tensor_dist`` without its partial axes."""
    mesh, mapping, _ = tensor_dist["D"]
    return {**tensor_dist, "D": [mesh, mapping, []]}


def reversed_dist_attr(text: str) -> str:
    """The op_dist_attr of the reshard from this one's result placements back to its operand's, partial as
    replicated."""
    document = json.loads(text)
    mesh, operands, results, *rest = document["D"]
    return json.dumps({**document, "D": [mesh, [_whole(results[0])], [_whole(operands[0])], *rest]}, sort_keys=True)


def _grad(g):
    try:
        reverse = reversed_dist_attr(g.attr(OP_DIST_ATTR))
    except (ValueError, KeyError, IndexError, TypeError):
        raise GradError(f"reshard: its {OP_DIST_ATTR} must be a reshard's (mesh, [operand tensor_dist], [result "
                        f"tensor_dist]) as JSON text, got {g.attr(OP_DIST_ATTR)!r:.80}") from None
    return [g.op("reshard", {"x": g.OG("out")}, {"out": g.IG("x")}, {OP_DIST_ATTR: reverse})]


def _local_dims(global_dims, tensor_dist: dict) -> list[int]:
    mesh, mapping, _ = tensor_dist["D"]
    shape = mesh["D"][0]
    return [size if axis == -1 or size < 0 else -(-size // shape[axis]) for size, axis in zip(global_dims, mapping)]


def _infer(ctx):
    """out: the dst block's dims (chunks of ceil(n / k)) of the global dims x's dist type states, or of x's dims
    taken as src's block of dims split evenly."""
    try:
        _, operands, results, *_ = json.loads(ctx.attr(OP_DIST_ATTR))["D"]
        src, dst = operands[0]["D"], results[0]["D"]
    except (ValueError, KeyError, IndexError, TypeError):
        ctx.fail(f"{OP_DIST_ATTR} must be a reshard's (mesh, [operand tensor_dist], [result tensor_dist]) as JSON "
                 f"text, got {ctx.attr(OP_DIST_ATTR)!r:.80}")
    x, shape = ctx.block.find_var(ctx.op.inputs["x"][0]), ctx.shape("x")
    if src[1] == dst[1] and src[0] == dst[0] or shape is None:
        return {"out": (shape, ctx.dtype("x"))}
    if x is not None and x.dist:
        return {"out": (_local_dims(x.dist[0], results[0]), ctx.dtype("x"))}
    mesh_shape = src[0]["D"][0]   # no global dims stated: x's are src's block of a dim split evenly
    whole = [size * mesh_shape[axis] if axis != -1 and size >= 0 else size for size, axis in zip(shape, src[1])]
    return {"out": (_local_dims(whole, results[0]), ctx.dtype("x"))}


defop("reshard", ["x"], ["out"], attrs={OP_DIST_ATTR: ""}, infer=_infer, grad=_grad)
