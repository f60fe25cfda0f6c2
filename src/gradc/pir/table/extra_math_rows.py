"""Rows: the PIR ops of the extra_math family (gradc.ops.extra_math)."""

from __future__ import annotations

from . import row

NORM = "axis:i32 epsilon:f32 is_test:bool"
RMS = "epsilon:f32 begin_norm_axis:i32 quant_scale:f32 quant_round_type:i32 quant_max_bound:f32 quant_min_bound:f32"
RMS_INPUTS = "x:x bias?:bias residual?:residual norm_weight:norm_weight norm_bias?:norm_bias"
LAYERNORM = ("epsilon:f32 residual_alpha:f32 begin_norm_axis:i32 quant_scale:f32 quant_round_type:i32"
             " quant_max_bound:f32 quant_min_bound:f32")
MARGINS = "return_softmax:bool ring_id:i32 rank:i32 nranks:i32 margin1:f32 margin2:f32 margin3:f32 scale:f32"

ROWS = [
    row("pd_op.gammaln", "gammaln", "x:x", "out:out"),
    row("pd_op.gammaln_grad", "gammaln_grad", "x:x out_grad:out@GRAD", "x_grad:x@GRAD"),
    row("pd_op.gammaincc", "gammaincc", "x:x y:y", "out:out"),
    row("pd_op.gammaincc_grad", "gammaincc_grad", "x:x y:y out_grad:out@GRAD", "y_grad:y@GRAD"),
    row("pd_op.nextafter", "nextafter", "x:x y:y", "out:out"),
    row("pd_op.multiplex", "multiplex", "inputs:X* index:Ids"),
    row("pd_op.multiplex_grad", "multiplex_grad", "inputs:X* index:Ids out_grad:Out@GRAD", "inputs_grad:X@GRAD*"),
    row("pd_op.reduce_as", "reduce_as", "x:x target:target", "out:out"),
    row("pd_op.reduce_as_grad", "reduce_as_grad", "x:x target:target out_grad:out@GRAD", "x_grad:x@GRAD"),
    row("pd_op.is_empty", "is_empty", "x:X"),
    row("pd_op.equal_all", "equal_all", "x:X y:Y"),
    row("pd_op.swiglu", "swiglu", "x:x y?:y", "out:out"),
    row("pd_op.swiglu_grad", "swiglu_grad", "x:x y?:y out_grad:out@GRAD", "x_grad:x@GRAD y_grad:y@GRAD"),
    row("pd_op.norm", "norm", "x:X", "out:Out norm:Norm", NORM),
    row("pd_op.norm_grad", "norm_grad", "x:X norm:Norm out_grad:Out@GRAD", "x_grad:X@GRAD", NORM),
    row("pd_op.margin_cross_entropy", "margin_cross_entropy", "logits:Logits label:Label", "softmax:Softmax loss:Loss",
        MARGINS),
    row("pd_op.margin_cross_entropy_grad", "margin_cross_entropy_grad",
        "logits:Logits label:Label softmax:Softmax loss_grad:Loss@GRAD", "logits_grad:Logits@GRAD", MARGINS),
    row("pd_op.fused_rms_norm_quant", "fused_rms_norm_quant", RMS_INPUTS,
        "out:out residual_out:residual_out inv_var:inv_var", RMS),
    row("pd_op.fused_rms_norm_quant_grad", "fused_rms_norm_quant_grad",
        f"{RMS_INPUTS} inv_var:inv_var out_grad:out@GRAD",
        "x_grad:x@GRAD norm_weight_grad:norm_weight@GRAD norm_bias_grad:norm_bias@GRAD", RMS),
    row("pd_op.fused_bias_residual_layernorm", "fused_bias_residual_layernorm",
        "x:x bias?:bias residual?:residual norm_weight?:norm_weight norm_bias?:norm_bias",
        "out:out residual_out:residual_out mean:mean variance:variance", LAYERNORM),
]
