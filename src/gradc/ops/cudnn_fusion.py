"""The cuDNN frontend fusions of resnet_unit's training path (paddle/phi/kernels/fusion/gpu, float16 kernels for
Ampere and later; Paddle 3.3.1's CPU build registers the ops but has no kernel). Every activation is NHWC, every
filter OIHW, every vector [C]:

- fused_scale_bias_relu_conv_bn: out = conv2d(relu(x scale + bias)) (just conv2d(x) without fuse_prologue), then
  out's batch statistics over accumulation_count values a channel (N Ho Wo when 0): saved_mean the mean, saved_var 1
  / sqrt(var + epsilon) (var = E[out^2] - mean^2), out_running_* = momentum * running + (1 - momentum) * batch (the
  variance's unbiased, count / (count - 1) var, as cuDNN's BN finalize), and the normalisation folded into eq_scale
  = bn_scale saved_var, eq_bias = bn_bias - saved_mean eq_scale, which the next op's scale and bias take: out itself
  is the raw convolution.
- fused_scale_bias_add_relu: out = relu(x1 scale1 + bias1 + x2), or + (x2 scale2 + bias2) with fuse_dual.
- fused_dconv_drelu_dbn: the backward of h = BN1(bn1_input) (+ BN2(bn2_input) with fuse_dual, + residual_input
  with fuse_shortcut) -> r = relu(h) -> conv2d(r, weight), at grad_output (plus grad_output_add, another reader's
  grad of r, with fuse_add). BN1 / BN2 are batch norm in training with the given statistics (bn*_mean, bn*_inv_std,
  the batch's): g = dr where h > 0; grad_bn1_gamma = sum(g xhat1), grad_bn1_beta = sum(g), grad_bn1_input its
  training grad; grad_bn2_* likewise (fuse_dual) or grad_bn2_input = g (fuse_shortcut: the residual's grad);
  grad_weight = conv2d's filter grad at input conv_input, or, without fuse_dual and fuse_shortcut, at
  relu(bn1_input bn1_eqscale + bn1_eqbias).

The kernels fix NHWC and pass no groups to cuDNN: data_format other than NHWC and groups other than 1 are refused.
Paddle defines no grad for them: forward-only, a backward through one is refused naming the op.
"""

from __future__ import annotations

from ..ir import AttrType
from ..registry import defop, typed
from ..shapes import dims_match
from .conv import conv_out_sizes, infer_geometry, resolve_padding
from .infer import check_float, one_dtype
from .nn import stats_dtype

CONV_ATTRS = {"paddings": [0, 0], "dilations": [1, 1], "strides": [1, 1], "padding_algorithm": "EXPLICIT",
              "groups": 1, "data_format": "NHWC"}


def check_vectors(ctx, channels: int | None, *slots: str) -> None:
    for slot in slots:
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if channels is not None and shape is not None and (len(shape) != 1 or not dims_match(shape[0], channels)):
            ctx.fail(f"{slot} must be a vector of the {channels} channels, got shape {shape}")


def nhwc_conv_out(ctx, x_slot: str, w_slot: str) -> list[int] | None:
    """The NHWC output shape of conv2d(x, w) with the op's attributes, after checking the layout cuDNN gets."""
    if ctx.attr("data_format") != "NHWC" or ctx.attr("groups") != 1:
        ctx.fail(f"the cuDNN kernel takes NHWC data with groups 1, got data_format {ctx.attr('data_format')!r} "
                 f"and groups {ctx.attr('groups')}")
    x, w = ctx.shape(x_slot), ctx.shape(w_slot)
    if x is None or w is None:
        return None
    if len(x) != 4 or len(w) != 4 or not dims_match(x[3], w[1]):
        ctx.fail(f"{x_slot} must be NHWC and {w_slot} OIHW with {x_slot}'s channels, got {x} and {w}")
    pads, dils = resolve_padding(x[1:3], w[2:], ctx.attr("strides"), ctx.attr("paddings"), ctx.attr("dilations"),
                                 ctx.attr("padding_algorithm"))
    return [x[0], *infer_geometry(ctx, conv_out_sizes, x[1:3], w[2:], ctx.attr("strides"), pads, dils), w[0]]


def _conv_bn_infer(ctx):
    check_float(ctx, "x")
    dtype = one_dtype(ctx, "x", "w")
    if ctx.attr("fuse_prologue") and not (ctx.has("scale") and ctx.has("bias")):
        ctx.fail("fuse_prologue needs scale and bias")
    out = nhwc_conv_out(ctx, "x", "w")
    x = ctx.shape("x")
    check_vectors(ctx, x[3] if x else None, "scale", "bias")
    check_vectors(ctx, out[3] if out else None, "bn_scale", "bn_bias", "input_running_mean", "input_running_var")
    vector, stats = ([out[3]] if out else None), stats_dtype(dtype)
    return {"out": (out, dtype), "out_running_mean": (vector, stats), "out_running_var": (vector, stats),
            "saved_mean": (vector, stats), "saved_var": (vector, stats), "eq_scale": (vector, dtype),
            "eq_bias": (vector, dtype)}


defop("fused_scale_bias_relu_conv_bn",
      ["x", "w", "scale?", "bias?", "bn_scale", "bn_bias", "input_running_mean", "input_running_var"],
      ["out", "out_running_mean", "out_running_var", "saved_mean", "saved_var", "eq_scale", "eq_bias"],
      attrs={**CONV_ATTRS, "momentum": 0.9, "epsilon": 1e-5, "fuse_prologue": False, "exhaustive_search": False,
             "accumulation_count": typed(0, AttrType.LONG)}, infer=_conv_bn_infer)


def _add_relu_infer(ctx):
    check_float(ctx, "x1")
    dtype, x1, x2 = one_dtype(ctx, "x1", "x2"), ctx.shape("x1"), ctx.shape("x2")
    if x1 is not None and x2 is not None and (len(x1) != len(x2) or not all(map(dims_match, x1, x2))):
        ctx.fail(f"x1 {x1} and x2 {x2} must have one shape")
    if ctx.attr("fuse_dual") and not (ctx.has("scale2") and ctx.has("bias2")):
        ctx.fail("fuse_dual needs scale2 and bias2")
    check_vectors(ctx, x1[-1] if x1 else None, "scale1", "bias1", "scale2", "bias2")
    return {"out": (x1, dtype)}


defop("fused_scale_bias_add_relu", ["x1", "scale1", "bias1", "x2", "scale2?", "bias2?"], ["out"],
      attrs={"fuse_dual": False, "exhaustive_search": False}, infer=_add_relu_infer)


BN1 = ("bn1_mean", "bn1_inv_std", "bn1_gamma", "bn1_beta")
BN2 = ("bn2_mean", "bn2_inv_std", "bn2_gamma", "bn2_beta", "bn2_input")


def _dconv_infer(ctx):
    check_float(ctx, "grad_output")
    dtype, shortcut, dual = one_dtype(ctx, "grad_output", "weight", "bn1_input"), ctx.attr("fuse_shortcut"), \
        ctx.attr("fuse_dual")
    if shortcut and dual:
        ctx.fail("fuse_shortcut and fuse_dual exclude each other")
    needs = (["residual_input"] if shortcut else []) + (list(BN2) if dual else []) + (
        ["conv_input"] if shortcut or dual else ["bn1_eqscale", "bn1_eqbias"]) + (
        ["grad_output_add"] if ctx.attr("fuse_add") else [])
    if missing := [slot for slot in needs if not ctx.has(slot)]:
        ctx.fail(f"fuse_shortcut {shortcut}, fuse_dual {dual} and fuse_add {ctx.attr('fuse_add')} need "
                 f"{', '.join(missing)}")
    out, x = nhwc_conv_out(ctx, "bn1_input", "weight"), ctx.shape("bn1_input")
    dy = ctx.shape("grad_output")
    if out is not None and dy is not None and not all(map(dims_match, out, dy)):
        ctx.fail(f"grad_output {dy} must be the convolution's output {out}")
    for slot in ("grad_output_add", "residual_input", "conv_input", "bn2_input"):
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if x is not None and shape is not None and not all(map(dims_match, shape, x)):
            ctx.fail(f"{slot} {shape} must have bn1_input's shape {x}")
    check_vectors(ctx, x[3] if x else None, *BN1, "bn1_eqscale", "bn1_eqbias", *BN2[:4])
    vector, stats = ([x[3]] if x else None), stats_dtype(dtype)
    results = {"grad_weight": (ctx.shape("weight"), dtype), "grad_bn1_input": (x, dtype),
               "grad_bn1_gamma": (vector, stats), "grad_bn1_beta": (vector, stats)}
    if shortcut or dual:
        results["grad_bn2_input"] = (x, dtype)
    if dual:
        results |= {"grad_bn2_gamma": (vector, stats), "grad_bn2_beta": (vector, stats)}
    return results


defop("fused_dconv_drelu_dbn",
      ["grad_output", "weight", "grad_output_add?", "residual_input?", "bn1_eqscale?", "bn1_eqbias?", "conv_input?",
       *BN1, "bn1_input", *(f"{slot}?" for slot in BN2)],
      ["grad_weight", "grad_bn1_input", "grad_bn1_gamma", "grad_bn1_beta", "grad_bn2_input?", "grad_bn2_gamma?",
       "grad_bn2_beta?"],
      attrs={**CONV_ATTRS, "fuse_shortcut": False, "fuse_dual": False, "fuse_add": False, "exhaustive_search": False},
      infer=_dconv_infer)
