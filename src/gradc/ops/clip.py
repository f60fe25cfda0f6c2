"""Gradient clipping ops: squared_l2_norm (ClipGradByGlobalNorm's per-gradient term) and clip_by_norm
(ClipGradByNorm). ClipGradByValue writes `clip` (gradc.ops.math); the global norm's other ops (sum, sqrt,
elementwise_max/div/mul, fill_constant) are ordinary math ops."""

from __future__ import annotations

from ..registry import defop, grad_op
from .composite import expansion


def _squared_l2_norm_infer(ctx):
    return {"Out": ([1], ctx.dtype("X"))}


# d(sum x^2) = 2 x dOut: Paddle's squared_l2_norm_grad reads X and Out@GRAD
defop("squared_l2_norm", ["X"], infer=_squared_l2_norm_infer, grad=grad_op("X"))


def _clip_by_norm_infer(ctx):
    if ctx.attr("max_norm") < 0:
        ctx.fail(f"attribute max_norm is {ctx.attr('max_norm')}, but it must be >= 0")
    return {"Out": (ctx.shape("X"), ctx.dtype("X"))}


def _clip_by_norm_again(f, g):
    """Out = X * c / max(||X||, c), in differentiable ops: the maker differentiates this (at ||X|| = c, the
    side where X passes unscaled, as the kernel does)."""
    x = g.I("X")[0]
    norm = f.unary("sqrt", f.op("squared_l2_norm", {"X": x}, x, dims=lambda shape: [1]))
    limit = f.fill_like(norm, g.attr("max_norm"))
    scale = f.div(limit, f.op("elementwise_max", {"X": norm, "Y": limit}, norm), norm)
    return {"Out": f.mul(x, scale, x)}


# Paddle registers clip_by_norm without a grad maker, and its append_backward silently cuts the gradient
# there; gradc gives the gradient (composite, so it needs no kernel). max_norm has no default in Paddle's op.
defop("clip_by_norm", ["X"], attrs={"max_norm": 1.0}, infer=_clip_by_norm_infer,
      grad=expansion(_clip_by_norm_again))
