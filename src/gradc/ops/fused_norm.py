"""The GPU-only norms of Paddle 3.3.1: rms_norm (paddle.nn.functional.rms_norm), fast_ln and fast_rms_norm
(paddle.incubate.nn.functional's, apex's fast layer norm) and fused_rms_norm_ext (PaddleNLP's fused RMS norm, the
formula and slots of fast_rms_norm). gradc follows the CUDA kernels' formulas, over the last dim (rms_norm: the
last len(normalized_shape) dims, which must equal normalized_shape), one row per leading index:

    fast_ln:       y = (x - mean) invvar scale + bias,  invvar = 1 / sqrt(var(x) + epsilon)  (biased variance)
    fast_rms_norm, fused_rms_norm_ext:
                   y = x invvar scale,                  invvar = 1 / sqrt(mean(x^2) + epsilon)
    rms_norm:      y = x invvar scale (scale optional), invvar likewise

mean and invvar are flat [rows] (rows: the product of the leading dims), float32 for float32 / float16 / bfloat16 x
(the kernels' compute type) and float64 for float64 x. Their grad ops (fast_ln_grad, fast_rms_norm_grad,
fused_rms_norm_ext_grad, rms_norm_grad) read x, scale and the saved statistics, as Paddle's do; gradc's kernels
recompute the statistics from x in float64. Second derivatives: gradc.ops.fused_norm_double.
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..makers import grad_op
from ..registry import defop, typed
from ..shapes import dims_match, numel
from .infer import check_choice, check_float, one_dtype
from .nn import stats_dtype

RMS_NORM_ATTRS = {"normalized_shape": typed([], AttrType.LONGS), "epsilon": typed(1e-5, AttrType.FLOAT64)}


def _check(ctx, op: str, slots: tuple[str, ...]):
    """x's shape and dtype and the normalised dims, with each given slot shaped like those dims (fast norms: flat)."""
    check_float(ctx, "x")
    dtype = one_dtype(ctx, "x", *(slot for slot in slots if ctx.has(slot)))
    x = ctx.shape("x")
    if x is None:
        return None, dtype, None
    if op == "rms_norm":
        normalized = list(ctx.attr("normalized_shape"))
        if not normalized or len(normalized) > len(x) or not all(map(dims_match, x[len(x) - len(normalized):],
                                                                      normalized)):
            ctx.fail(f"normalized_shape {normalized} must be x's last dims, x {x}")
    else:
        if not x:
            ctx.fail(f"x must have a last dim to normalise, got {x}")
        normalized = x[-1:]
    for slot in slots:
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if shape is not None and (numel(shape) >= 0 and numel(normalized) >= 0 and numel(shape) != numel(normalized)):
            ctx.fail(f"{slot} {shape} must hold one value per normalised element {normalized}")
    rows = numel(x[:len(x) - len(normalized)])
    return x, dtype, [rows]


def _infer_of(op: str, slots: tuple[str, ...], stats: tuple[str, ...]):
    def infer(ctx):
        x, dtype, rows = _check(ctx, op, slots)
        return {"y": (x, dtype), **{name: (rows, stats_dtype(dtype)) for name in stats}}

    return infer


defop("fast_ln", ["x", "scale", "bias"], ["y", "mean", "invvar"], attrs={"epsilon": 1e-5},
      infer=_infer_of("fast_ln", ("scale", "bias"), ("mean", "invvar")), no_grad_outputs=["mean", "invvar"],
      grad=grad_op("x", "scale", "mean", "invvar"))
defop("fast_rms_norm", ["x", "scale"], ["y", "invvar"], attrs={"epsilon": 1e-5},
      infer=_infer_of("fast_rms_norm", ("scale",), ("invvar",)), no_grad_outputs=["invvar"],
      grad=grad_op("x", "scale", "invvar"))
defop("fused_rms_norm_ext", ["x", "scale"], ["y", "invvar"], attrs={"epsilon": 1e-5},
      infer=_infer_of("fused_rms_norm_ext", ("scale",), ("invvar",)), no_grad_outputs=["invvar"],
      grad=grad_op("x", "scale", "invvar"))
defop("rms_norm", ["x", "scale?"], ["y", "invvar"], attrs=RMS_NORM_ATTRS,
      infer=_infer_of("rms_norm", ("scale",), ("invvar",)), no_grad_outputs=["invvar"],
      grad=grad_op("x", "scale", "invvar"))


# fused_bias_dropout_residual_layer_norm (paddle.incubate.nn.FusedBiasDropoutResidualLayerNorm): h = residual +
# dropout(x + bias), y = layer_norm(h) over the last dim (ln_scale, ln_bias optional); its dropout only where it
# draws nothing (is_test, or a rate of 0), where it scales by 1 - rate (downgrade_in_infer at test) or 1
BDR_ATTRS = {"dropout_rate": 0.5, "is_test": False, "dropout_fix_seed": True, "dropout_seed": 1,
             "dropout_implementation": "downgrade_in_infer", "ln_epsilon": 1e-5}
BDR_STATE = ("LnMean", "LnVariance", "BiasDropoutResidualOut", "DropoutMaskOut")


def dropout_factor(attrs) -> float:
    """What dropout multiplies by where it draws nothing: 1 - rate at test with downgrade_in_infer, else 1."""
    test_downgrade = attrs("is_test") and attrs("dropout_implementation") == "downgrade_in_infer"
    return 1.0 - attrs("dropout_rate") if test_downgrade else 1.0


def _bdr_infer(ctx):
    check_float(ctx, "X")
    if not ctx.attr("is_test") and ctx.attr("dropout_rate") > 0:
        ctx.fail(f"dropout_rate={ctx.attr('dropout_rate')} in training draws its mask from Paddle's GPU random "
                 "stream, which gradc cannot reproduce: only is_test or a dropout_rate of 0 run")
    check_choice(ctx, "dropout_implementation", ("downgrade_in_infer", "upscale_in_train"))
    dtype = one_dtype(ctx, "X", "Residual", *(slot for slot in ("Bias", "LnScale", "LnBias") if ctx.has(slot)))
    x = ctx.shape("X")
    if x is None:
        return {}
    if len(x) < 2:
        ctx.fail(f"X must be at least 2-D [rows..., cols], got {x}")
    if ctx.shape("Residual") not in (None, x):
        ctx.fail(f"Residual {ctx.shape('Residual')} must be shaped like X {x}")
    for slot in ("Bias", "LnScale", "LnBias"):
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if shape is not None and (len(shape) != 1 or not dims_match(shape[0], x[-1])):
            ctx.fail(f"{slot} must be [{x[-1]}] (X's last dim), got {shape}")
    stats = ([numel(x[:-1])], stats_dtype(dtype))
    return {"Y": (x, dtype), "BiasDropoutResidualOut": (x, dtype), "DropoutMaskOut": (x, VarType.UINT8),
            "LnMean": stats, "LnVariance": stats}


defop("fused_bias_dropout_residual_layer_norm", ["X", "Residual", "Bias?", "LnScale?", "LnBias?"],
      ["Y", *BDR_STATE], attrs=BDR_ATTRS, infer=_bdr_infer, no_grad_outputs=BDR_STATE,
      grad=grad_op("X", "Residual", "Bias", "LnScale", "LnBias", *BDR_STATE))
