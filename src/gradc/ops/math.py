"""Arithmetic: elementwise_*, mul, matmul(_v2), bmm, bilinear_tensor_product, scale, sum, unary math, clip,
where, cumsum.

Integer values get no gradient: an integer result is a piecewise constant function of anything it is
computed from, so its derivative is zero wherever it exists (docs/ops-activation-math.md). Paddle runs
grad kernels on integer vars whose stop_gradient is cleared; gradc's backward passes them by.
"""

from __future__ import annotations

from ..ir import COMPLEX_DTYPES, EMPTY_VAR, VarType, real_dtype
from ..registry import NO_GRAD, defop, grad_op
from ..shapes import dims_match, numel
from .activation import activation
from .infer import broadcast_shapes, same_as

ELEMENTWISE_ATTRS = {"axis": -1}


def _elementwise_infer(ctx):
    """Out has X's dtype, or a complex one where only Y is complex: Paddle's kernels promote a real X, as numpy does
    (float64 with complex64: complex128)."""
    x, y = ctx.dtype("X"), ctx.dtype("Y")
    if y in COMPLEX_DTYPES and x not in COMPLEX_DTYPES:
        x = VarType.COMPLEX128 if x == VarType.FP64 else y
    return {"Out": (broadcast_shapes(ctx, ctx.shape("X"), ctx.shape("Y"), ctx.attr("axis")), x)}


for _name in ("elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_max", "elementwise_min",
              "elementwise_pow"):
    defop(_name, ["X", "Y"], attrs=ELEMENTWISE_ATTRS, infer=_elementwise_infer, grad=grad_op("X", "Y"))
defop("elementwise_div", ["X", "Y"], attrs=ELEMENTWISE_ATTRS, infer=_elementwise_infer, grad=grad_op("X", "Y", "Out"))
# floor(x / y) is piecewise constant: no gradient. x mod y = x - y floor(x / y) is not: Paddle's maker
# emits remainder_grad (dX = dOut, dY = -floor(x / y) dOut), for which Paddle 3.3.1 has no CPU kernel.
defop("elementwise_floordiv", ["X", "Y"], attrs=ELEMENTWISE_ATTRS, infer=_elementwise_infer, grad=NO_GRAD)
# trunc(x / y) (paddle.divide's rounding_mode "trunc"): piecewise constant, no gradient (nor has Paddle one)
defop("trunc_divide", ["x", "y"], ["out"], infer=lambda ctx: {"out": (broadcast_shapes(ctx, ctx.shape("x"),
                                                                      ctx.shape("y")), ctx.dtype("x"))}, grad=NO_GRAD)
defop("elementwise_mod", ["X", "Y"], attrs=ELEMENTWISE_ATTRS, infer=_elementwise_infer,
      grad=grad_op("X", "Y", grad_type="remainder_grad"))


def _mul_infer(ctx):
    x, y = ctx.shape("X"), ctx.shape("Y")
    xn, yn = ctx.attr("x_num_col_dims"), ctx.attr("y_num_col_dims")
    k_x, k_y = numel(x[xn:]), numel(y[:yn])
    if not dims_match(k_x, k_y):
        ctx.fail(f"X flattens to [*, {k_x}] but Y to [{k_y}, *]")
    return {"Out": (x[:xn] + y[yn:], ctx.dtype("X"))}



defop("mul", ["X", "Y"], attrs={"x_num_col_dims": 1, "y_num_col_dims": 1}, infer=_mul_infer,
      grad=grad_op("X", "Y"))


def _matmul_shape(ctx, trans_x: bool, trans_y: bool) -> list[int]:
    """Batched matmul with broadcast batch dims; a 1-D X is a row, a 1-D Y a column, and the
    promoted dim is dropped from the output."""
    x, y = ctx.shape("X"), ctx.shape("Y")
    if trans_x and len(x) >= 2:
        x = x[:-2] + [x[-1], x[-2]]
    if trans_y and len(y) >= 2:
        y = y[:-2] + [y[-1], y[-2]]
    x2, y2 = ([1] + x if len(x) == 1 else x), (y + [1] if len(y) == 1 else y)
    if not dims_match(x2[-1], y2[-2]):
        ctx.fail(f"contraction dims differ: {x2[-1]} vs {y2[-2]}")
    batch = broadcast_shapes(ctx, x2[:-2], y2[:-2]) if x2[:-2] or y2[:-2] else []
    return batch + ([x2[-2]] if len(x) > 1 else []) + ([y2[-1]] if len(y) > 1 else [])


defop("matmul_v2", ["X", "Y"], attrs={"trans_x": False, "trans_y": False}, grad=grad_op("X", "Y"),
      infer=lambda ctx: {"Out": (_matmul_shape(ctx, ctx.attr("trans_x"), ctx.attr("trans_y")), ctx.dtype("X"))})

# The legacy matmul: Out = alpha * op(X) @ op(Y); two 1-D operands give shape [1], not [].
defop("matmul", ["X", "Y"], attrs={"transpose_X": False, "transpose_Y": False, "alpha": 1.0, "head_number": 1},
      grad=grad_op("X", "Y"),
      infer=lambda ctx: {"Out": (_matmul_shape(ctx, ctx.attr("transpose_X"), ctx.attr("transpose_Y")) or [1],
                                 ctx.dtype("X"))})


def _bmm_infer(ctx):
    x, y = ctx.shape("X"), ctx.shape("Y")
    if len(x) != 3 or len(y) != 3:
        ctx.fail(f"bmm takes 3-D X and Y, got ranks {len(x)} and {len(y)}")
    if not (dims_match(x[0], y[0]) and dims_match(x[2], y[1])):
        ctx.fail(f"bmm needs X [B, M, K] and Y [B, K, N], got {x} and {y}")
    return {"Out": ([x[0] if x[0] >= 0 else y[0], x[1], y[2]], ctx.dtype("X"))}


defop("bmm", ["X", "Y"], infer=_bmm_infer, grad=grad_op("X", "Y"))


def _bilinear_infer(ctx):
    x, y, w = ctx.shape("X"), ctx.shape("Y"), ctx.shape("Weight")
    if len(x) != 2 or len(y) != 2 or len(w) != 3:
        ctx.fail(f"bilinear_tensor_product takes X [B, M], Y [B, N] and Weight [K, M, N], got {x}, {y} and {w}")
    if not (dims_match(x[0], y[0]) and dims_match(x[1], w[1]) and dims_match(y[1], w[2])):
        ctx.fail(f"X {x}, Y {y} and Weight {w} do not match: X [B, M], Y [B, N], Weight [K, M, N]")
    if ctx.has("Bias") and (len(ctx.shape("Bias")) != 2 or not dims_match(ctx.shape("Bias")[0], 1)
                            or not dims_match(ctx.shape("Bias")[1], w[0])):
        ctx.fail(f"Bias must be a row [1, {w[0]}], got {ctx.shape('Bias')}")
    return {"Out": ([x[0] if x[0] >= 0 else y[0], w[0]], ctx.dtype("X"))}


# nn.Bilinear: Out[b, k] = X[b] . Weight[k] . Y[b] + Bias[0, k]
defop("bilinear_tensor_product", ["X", "Y", "Weight", "Bias?"], infer=_bilinear_infer,
      grad=grad_op("X", "Y", "Weight"))


def _scale_grad(g):
    """d(scale x + b) = scale dOut: the grad of scale is a scale (no new kernel), by the ScaleTensor when
    there is one. Paddle's maker also passes the BiasTensor on, which then adds the bias to the gradient
    (a Paddle bug); gradc does not."""
    return [g.op("scale", {"X": g.OG("Out"), "ScaleTensor": g.I("ScaleTensor")}, {"Out": g.IG("X")},
                 {"scale": g.attr("scale"), "bias": 0.0, "bias_after_scale": True})]


def _scale_infer(ctx):
    for slot in ("ScaleTensor", "BiasTensor"):
        if ctx.has(slot) and not dims_match(numel(ctx.shape(slot)), 1):
            ctx.fail(f"{slot} must hold one value, but has shape {ctx.shape(slot)}")
    return {"Out": (ctx.shape("X"), ctx.dtype("X"))}


# Out = scale * X + bias (bias_after_scale) or scale * (X + bias); ScaleTensor and BiasTensor, one value
# each, override the attributes. Paddle gives them no gradient.
defop("scale", ["X", "ScaleTensor?", "BiasTensor?"], attrs={"scale": 1.0, "bias": 0.0, "bias_after_scale": True},
      infer=_scale_infer, no_grad_inputs=["ScaleTensor", "BiasTensor"], grad=_scale_grad)


def _sum_grad(g):
    """Each addend's grad is the output grad: one scale(1) per input, as Paddle emits; an assign per input where
    the addends are tensor arrays (a backward's sum of array grads, differentiated again), which scale does not take."""
    if _of_arrays(g, g.I("X")):
        return [g.op("assign", {"X": g.OG("Out")}, {"Out": [ig]}) for ig in g.IG("X") if ig != EMPTY_VAR]
    return [g.op("scale", {"X": g.OG("Out")}, {"Out": [ig]}, {"scale": 1.0, "bias": 0.0})
            for ig in g.IG("X") if ig != EMPTY_VAR]


def _of_arrays(g, names: list[str]) -> bool:
    """Whether the (first declared of the) vars are tensor arrays."""
    found = [var for var in (g.block.visible_var(name) for name in names) if var is not None] if g.block else []
    return bool(found) and found[0].type == VarType.DENSE_TENSOR_ARRAY


def _sum_infer(ctx):
    shapes = ctx.shapes("X")
    for shape in shapes[1:]:
        if len(shape) != len(shapes[0]) or not all(map(dims_match, shape, shapes[0])):
            ctx.fail(f"the addends must have one shape, got {shapes}")
    return {"Out": (shapes[0], ctx.dtype("X"))}


defop("sum", ["X[]"], infer=_sum_infer, grad=_sum_grad)


def _abs_infer(ctx):
    """|X| is real, also of a complex X."""
    return {"Out": (ctx.shape("X"), real_dtype(ctx.dtype("X")))}


# Unary math, with the forward value each Paddle grad op reads (Out where dx is a function of it).
activation("exp", "Out")
activation("log", "X")
activation("sqrt", "Out")
activation("rsqrt", "Out")
activation("square", "X")
activation("abs", "X", infer=_abs_infer)
activation("cos", "X")
activation("sin", "X")
defop("pow", ["X", "FactorTensor?"], attrs={"factor": 1.0}, infer=same_as("X"),
      no_grad_inputs=["FactorTensor"], grad=grad_op("X", "FactorTensor"))


def _sign_grad(g):
    """sign is piecewise constant: its grad is the output grad scaled by 0, as Paddle emits."""
    return [g.op("scale", {"X": g.OG("Out")}, {"Out": g.IG("X")},
                 {"scale": 0.0, "bias": 0.0, "bias_after_scale": True})]


defop("sign", ["X"], infer=same_as("X"), grad=_sign_grad)

FLOAT32_MAX = 3.4028234663852886e38
def _clip_infer(ctx):
    if not (ctx.has("Min") or ctx.has("Max")) and not ctx.attr("min") <= ctx.attr("max"):
        ctx.fail(f"min {ctx.attr('min')} is above max {ctx.attr('max')}")
    return same_as("X")(ctx)


defop("clip", ["X", "Min?", "Max?"], attrs={"min": -FLOAT32_MAX, "max": FLOAT32_MAX}, infer=_clip_infer,
      no_grad_inputs=["Min", "Max"], grad=grad_op("X", "Min", "Max"))


def _where_infer(ctx):
    shape = broadcast_shapes(ctx, ctx.shape("X"), ctx.shape("Y"))
    return {"Out": (broadcast_shapes(ctx, shape, ctx.shape("Condition")), ctx.dtype("X"))}


defop("where", ["Condition", "X", "Y"], infer=_where_infer, no_grad_inputs=["Condition"],
      grad=grad_op("Condition", "X", "Y"))


def _cumsum_infer(ctx):
    x = ctx.shape("X")
    if not ctx.attr("flatten"):
        ctx.axis(ctx.attr("axis"), len(x))
    return {"Out": ([numel(x)] if ctx.attr("flatten") else x, ctx.dtype("X"))}


CUMSUM_ATTRS = {"axis": -1, "flatten": False, "exclusive": False, "reverse": False}
# Paddle 3.3.1 emits cumsum_grad (X, Out@GRAD): the running sum of the grad the other way, shaped like X
defop("cumsum", ["X"], attrs=CUMSUM_ATTRS, infer=_cumsum_infer, grad=grad_op("X"), tensor_attrs=["axis"])
