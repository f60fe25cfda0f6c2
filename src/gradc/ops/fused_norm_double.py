"""Second derivatives of gradc.ops.fused_norm: each grad op written again with differentiable ops that recompute
the statistics from x (the saved mean and invvar get no gradient of their own), and differentiated, so third
derivatives follow. fast_ln_grad: layer_norm over the last dim and layer_norm_grad (bias@GRAD: dy summed over the
rows); fast_rms_norm_grad, fused_rms_norm_ext_grad and rms_norm_grad: fused_rms_norm_quant_grad
(gradc.ops.extra_math_rms), with a scale of ones for rms_norm without one; fused_bias_dropout_residual_layer_norm_grad:
h recomputed from X, Bias and Residual, then layer_norm and layer_norm_grad."""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad
from .composite import expansion, first
from .fused_norm import dropout_factor


def _known(g, x: str, axis_of) -> int:
    """The first normalised axis: the formulas need x's rank, not its sizes (a batch of -1 is fine)."""
    shape = g.shape(x)
    if shape is None or len(shape) < 2:
        raise GradError(f"{g.fwd.type}: x {x} must have a known rank >= 2, got shape {shape}")
    return axis_of(shape)


@expansion
def _ln_again(f, g):
    x, scale, dy = first(g.I("x")), first(g.I("scale")), first(g.I("y@GRAD"))
    axis = _known(g, x, lambda s: len(s) - 1)
    attrs = {"epsilon": g.attr("epsilon"), "begin_norm_axis": axis, "is_test": False}
    stats = [g.tmp(x, lambda s: s[:axis]) for _ in range(2)]
    f.emit("layer_norm", {"X": [x], "Scale": [scale]}, {"Y": [g.tmp(x)], "Mean": [stats[0]], "Variance": [stats[1]]},
           attrs)
    dx, dscale = g.tmp(x), g.tmp(scale)
    f.emit("layer_norm_grad", {"X": [x], "Scale": [scale], "Mean": [stats[0]], "Variance": [stats[1]],
                               "Y@GRAD": [dy]}, {"X@GRAD": [dx], "Scale@GRAD": [dscale]}, attrs)
    dbias = f.op("reduce_sum", {"X": dy}, dy, {"dim": list(range(axis)), "keep_dim": False, "reduce_all": False},
                 dims=lambda s: s[axis:])
    return {"x@GRAD": dx, "scale@GRAD": dscale, "bias@GRAD": dbias}


@expansion
def _rms_again(f, g):
    x, dy = first(g.I("x")), first(g.I("y@GRAD"))
    count = len(g.attr("normalized_shape")) if g.fwd.type == "rms_norm_grad" else 1
    axis = _known(g, x, lambda s: len(s) - count)
    scale = first(g.I("scale"))
    if scale is None:   # ones shaped like the normalised dims: a mean of ones over the rows
        scale = f.op("reduce_mean", {"X": f.fill_like(x, 1.0)}, x,
                     {"dim": list(range(axis)), "keep_dim": False, "reduce_all": False}, dims=lambda s: s[axis:])
    dx, dscale = g.tmp(x), g.tmp(scale)
    f.emit("fused_rms_norm_quant_grad", {"x": [x], "norm_weight": [scale], "inv_var": g.I("invvar"),
                                         "out@GRAD": [dy]}, {"x@GRAD": [dx], "norm_weight@GRAD": [dscale]},
           {"epsilon": g.attr("epsilon"), "begin_norm_axis": axis})
    return {"x@GRAD": dx, **({"scale@GRAD": dscale} if first(g.I("scale")) else {})}


defgrad("fast_ln_grad", grad=_ln_again, no_grad_inputs=["mean", "invvar"])
defgrad("fast_rms_norm_grad", grad=_rms_again, no_grad_inputs=["invvar"])
defgrad("fused_rms_norm_ext_grad", grad=_rms_again, no_grad_inputs=["invvar"])
defgrad("rms_norm_grad", grad=_rms_again, no_grad_inputs=["invvar"])


@expansion
def _bdr_again(f, g):
    """h = (X + Bias) factor + Residual recomputed, then layer_norm and layer_norm_grad over the last dim."""
    x, dy = first(g.I("X")), first(g.I("Y@GRAD"))
    axis = _known(g, x, lambda s: len(s) - 1)
    factor = dropout_factor(g.attr)
    h = x if not first(g.I("Bias")) else f.add(x, first(g.I("Bias")), x)
    h = f.add(f.scale(h, factor), first(g.I("Residual")), x)
    weights = {"Scale": g.I("LnScale"), "Bias": g.I("LnBias")}
    attrs = {"epsilon": g.attr("ln_epsilon"), "begin_norm_axis": axis, "is_test": False}
    stats = [g.tmp(x, lambda s: s[:axis]) for _ in range(2)]
    f.emit("layer_norm", {"X": [h], **weights}, {"Y": [g.tmp(x)], "Mean": [stats[0]], "Variance": [stats[1]]}, attrs)
    dh = g.tmp(x)
    grads = {"Scale@GRAD": [g.tmp(first(g.I("LnScale")))] if first(g.I("LnScale")) else [],
             "Bias@GRAD": [g.tmp(first(g.I("LnBias")))] if first(g.I("LnBias")) else []}
    f.emit("layer_norm_grad", {"X": [h], **weights, "Mean": [stats[0]], "Variance": [stats[1]], "Y@GRAD": [dy]},
           {"X@GRAD": [dh], **grads}, attrs)
    dx = f.scale(dh, factor)
    named = (("LnScale@GRAD", "Scale@GRAD"), ("LnBias@GRAD", "Bias@GRAD"))
    results = {"X@GRAD": dx, "Residual@GRAD": f.scale(dh, 1.0),
               **{slot: first(grads[key]) for slot, key in named if grads[key]}}
    if first(g.I("Bias")):
        results["Bias@GRAD"] = f.op("reduce_sum", {"X": dx}, dx,
                                    {"dim": list(range(axis)), "keep_dim": False, "reduce_all": False},
                                    dims=lambda s: s[axis:])
    return results


defgrad("fused_bias_dropout_residual_layer_norm_grad", grad=_bdr_again,
        no_grad_inputs=["LnMean", "LnVariance", "BiasDropoutResidualOut", "DropoutMaskOut"])
