"""Gradient clipping ops: squared_l2_norm (ClipGradByGlobalNorm's per-gradient term) and clip_by_norm
(ClipGradByNorm). ClipGradByValue writes `clip` (gradc.ops.math); the global norm's other ops (sum, sqrt,
elementwise_max/div/mul, fill_constant) are ordinary math ops."""

from __future__ import annotations

from ..registry import defop, grad_op


def _squared_l2_norm_infer(ctx):
    return {"Out": ([1], ctx.dtype("X"))}


# d(sum x^2) = 2 x dOut: Paddle's squared_l2_norm_grad reads X and Out@GRAD
defop("squared_l2_norm", ["X"], infer=_squared_l2_norm_infer, grad=grad_op("X"))


def _clip_by_norm_infer(ctx):
    if ctx.attr("max_norm") < 0:
        ctx.fail(f"attribute max_norm is {ctx.attr('max_norm')}, but it must be >= 0")
    return {"Out": (ctx.shape("X"), ctx.dtype("X"))}


# Paddle registers clip_by_norm without a grad maker (its append_backward silently stops there). gradc has
# none either, so a clip_by_norm on the way to a loss is reported instead of cutting the gradient off; its
# composite gradient needs [1]-shaped temporaries, which grad makers cannot declare yet. max_norm has no
# default in Paddle's op.
defop("clip_by_norm", ["X"], attrs={"max_norm": 1.0}, infer=_clip_by_norm_infer)
