"""Arithmetic: mul, matmul_v2, elementwise_*, scale, sum."""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defop, grad_op
from .infer import broadcast_shapes, dims_match

ELEMENTWISE_ATTRS = {"axis": -1}


def _elementwise_infer(ctx):
    return {"Out": (broadcast_shapes(ctx, ctx.shape("X"), ctx.shape("Y"), ctx.attr("axis")), ctx.dtype("X"))}


for _name in ("elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div"):
    defop(_name, ["X", "Y"], attrs=ELEMENTWISE_ATTRS, infer=_elementwise_infer,
          grad=grad_op("X", "Y") if _name != "elementwise_div" else grad_op("X", "Y", "Out"))


def _mul_infer(ctx):
    x, y = ctx.shape("X"), ctx.shape("Y")
    xn, yn = ctx.attr("x_num_col_dims"), ctx.attr("y_num_col_dims")
    k_x, k_y = _prod(x[xn:]), _prod(y[:yn])
    if not dims_match(k_x, k_y):
        ctx.fail(f"X flattens to [*, {k_x}] but Y to [{k_y}, *]")
    return {"Out": (x[:xn] + y[yn:], ctx.dtype("X"))}


def _prod(dims):
    total = 1
    for d in dims:
        if d < 0:
            return -1
        total *= d
    return total


defop("mul", ["X", "Y"], attrs={"x_num_col_dims": 1, "y_num_col_dims": 1}, infer=_mul_infer,
      grad=grad_op("X", "Y"))


def _matmul_infer(ctx):
    x, y = ctx.shape("X"), ctx.shape("Y")
    if ctx.attr("trans_x") and len(x) >= 2:
        x = x[:-2] + [x[-1], x[-2]]
    if ctx.attr("trans_y") and len(y) >= 2:
        y = y[:-2] + [y[-1], y[-2]]
    x2, y2 = ([1] + x if len(x) == 1 else x), (y + [1] if len(y) == 1 else y)
    if not dims_match(x2[-1], y2[-2]):
        ctx.fail(f"contraction dims differ: {x2[-1]} vs {y2[-2]}")
    batch = broadcast_shapes(ctx, x2[:-2], y2[:-2]) if x2[:-2] or y2[:-2] else []
    out = batch + ([x2[-2]] if len(x) > 1 else []) + ([y2[-1]] if len(y) > 1 else [])
    return {"Out": (out, ctx.dtype("X"))}


defop("matmul_v2", ["X", "Y"], attrs={"trans_x": False, "trans_y": False}, infer=_matmul_infer,
      grad=grad_op("X", "Y"))


def _scale_grad(g):
    """d(scale*x + b) = scale * dOut: the grad of scale is a scale (no new kernel)."""
    return [g.op("scale", {"X": g.OG("Out")}, {"Out": g.IG("X")},
                 {"scale": g.attr("scale"), "bias": 0.0, "bias_after_scale": True})]


defop("scale", ["X"], attrs={"scale": 1.0, "bias": 0.0, "bias_after_scale": True},
      infer=lambda ctx: {"Out": (ctx.shape("X"), ctx.dtype("X"))}, grad=_scale_grad)


def _sum_grad(g):
    """Each addend's grad is the output grad: one scale(1) per input, as Paddle emits."""
    return [g.op("scale", {"X": g.OG("Out")}, {"Out": [ig]}, {"scale": 1.0, "bias": 0.0})
            for ig in g.IG("X") if ig != EMPTY_VAR]


defop("sum", ["X"], infer=lambda ctx: {"Out": (ctx.shape("X"), ctx.dtype("X"))}, grad=_sum_grad)
