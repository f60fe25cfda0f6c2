"""Draws from parametric distributions: truncated_gaussian_random (the TruncatedNormal initialiser), binomial
(successes in `count` trials of probability `prob`), standard_gamma (Gamma(x, 1)), dirichlet (gamma draws over the
last axis, normalised) and exponential (Tensor.exponential_: X overwritten with Exp(lambda) draws). The executor
draws them from gradc's generator (gradc.executor.randomness), or from their own seed where the op has one.

None is differentiable but exponential, whose grad is zeros (Paddle's maker emits fill_any_like of dOut, value
0): the draws do not depend on X's values. Paddle returns garbage where gradc refuses: counts below 0 (Paddle
draws 0), probabilities outside [0, 1] (Paddle clamps) or NaN (Paddle's sampler never returns), a gamma shape
<= 0 (Paddle gives the smallest normal float), lambda <= 0 (Paddle gives inf or negative draws).
"""

from __future__ import annotations

import math

from ..ir import FLOAT_DTYPES, AttrType, VarType
from ..registry import NO_GRAD, defop, typed
from .infer import check_float, float_like, one_dtype


def _truncated_infer(ctx):
    """Paddle's a and b bound the draws themselves (not in units of std); they clamp Paddle's inverse CDF."""
    shape, std, low, high = list(ctx.attr("shape")), ctx.attr("std"), ctx.attr("a"), ctx.attr("b")
    if any(d < 0 for d in shape):
        ctx.fail(f"truncated_gaussian_random shape {shape} has a negative dim")
    if not (0 < std < math.inf and math.isfinite(ctx.attr("mean"))):   # else every draw is NaN
        ctx.fail(f"truncated_gaussian_random needs a finite mean and std > 0, got mean {ctx.attr('mean')} and "
                 f"std {std}")
    if not low < high:
        ctx.fail(f"truncated_gaussian_random needs bounds a < b, got a {low} and b {high}")
    if ctx.attr("dtype") not in FLOAT_DTYPES:
        ctx.fail(f"truncated_gaussian_random draws floats, not dtype {ctx.attr('dtype')}")
    return {"Out": (shape, ctx.attr("dtype"))}


defop("truncated_gaussian_random", [],
      attrs={"shape": typed([], AttrType.INTS), "mean": 0.0, "std": 1.0, "seed": 0, "dtype": 5, "a": -2.0, "b": 2.0},
      infer=_truncated_infer, grad=NO_GRAD)


def _same_dims(x: list[int], y: list[int]) -> bool:
    """Whether two shapes can be one: same rank, each dim equal or unknown (-1) in one."""
    return len(x) == len(y) and all(a == b or -1 in (a, b) for a, b in zip(x, y))


def _binomial_infer(ctx):
    """paddle.binomial broadcasts count and prob and casts count to prob's float dtype before the op."""
    check_float(ctx, "prob")
    one_dtype(ctx, "prob", "count")
    count, prob = ctx.shape("count"), ctx.shape("prob")
    if count is not None and prob is not None and not _same_dims(count, prob):
        ctx.fail(f"binomial needs count and prob of one shape, got {count} and {prob}")
    return {"out": (prob, VarType.INT64)}


defop("binomial", ["count", "prob"], ["out"], infer=_binomial_infer, grad=NO_GRAD)
defop("standard_gamma", ["x"], ["out"], infer=float_like("x", "out"), grad=NO_GRAD)


def _dirichlet_infer(ctx):
    alpha = ctx.shape("Alpha")
    check_float(ctx, "Alpha")
    if alpha is not None and len(alpha) < 1:
        ctx.fail("dirichlet needs Alpha with a last axis of categories, got a 0-d Alpha")
    return {"Out": (alpha, ctx.dtype("Alpha"))}


defop("dirichlet", ["Alpha"], infer=_dirichlet_infer, grad=NO_GRAD)


def _exponential_infer(ctx):
    if not ctx.attr("lambda") > 0:
        ctx.fail(f"exponential needs lambda > 0, got {ctx.attr('lambda')}")
    return float_like()(ctx)


def _exponential_grad(g):
    """The draws do not depend on X: its grad is dOut times 0, as Paddle's maker writes it."""
    return [g.op("fill_any_like", {"X": g.OG("Out")}, {"Out": g.IG("X")}, {"value": 0.0, "dtype": -1})]


defop("exponential", ["X"], attrs={"lambda": 1.0}, infer=_exponential_infer, grad=_exponential_grad)
