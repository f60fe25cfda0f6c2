"""Rows: PaddleNLP's GPU-only fused ops (gradc.ops.fused_rope, fused_llm, fused_norm, weight_quant), named as
Paddle 3.3.1's PIR programs and its translation of their legacy ops name them (tools/paddle_gpu_only_translated.py,
tools/paddle_weight_quantize.py)."""

from __future__ import annotations

from . import row

ROPE = "use_neox_rotary_style:bool=true time_major:bool rotary_emb_base:f32=10000"
TABLES = "sin?:sin cos?:cos position_ids?:position_ids"
BIAS_ACT = ("act_method:str=gelu compute_dtype:str=default quant_scale:f32=-1 quant_round_type:i32"
            " quant_max_bound:f32 quant_min_bound:f32")

RMS_NORM = "normalized_shape:i64s epsilon:f64=1e-5"

BDR = ("dropout_rate:f32=0.5 is_test:bool dropout_fix_seed:bool=true dropout_seed:i32=1"
       " dropout_implementation:str=downgrade_in_infer ln_epsilon:f32=1e-5")
BDR_INPUTS = "x:X residual:Residual bias?:Bias ln_scale?:LnScale ln_bias?:LnBias"
BDR_STATE = ("bias_dropout_residual_out:BiasDropoutResidualOut dropout_mask_out:DropoutMaskOut ln_mean:LnMean"
             " ln_variance:LnVariance")

LINEAR = "weight_dtype:str=int8 arch:i32=80 group_size:i32=-1"
LINEAR_INPUTS = "x:x weight:weight bias?:bias weight_scale:weight_scale"

ROWS = [
    # a missing k or v gives Paddle's null out_k / out_v, which gradc leaves unwritten
    row("pd_op.fused_rotary_position_embedding", "fused_rotary_position_embedding", f"q:q k?:k v?:v {TABLES}",
        "out_q:out_q out_k:out_k out_v:out_v", ROPE),
    row("pd_op.fused_rotary_position_embedding_grad", "fused_rotary_position_embedding_grad",
        f"{TABLES} out_q_grad:out_q@GRAD out_k_grad?:out_k@GRAD out_v_grad?:out_v@GRAD",
        "q_grad:q@GRAD k_grad:k@GRAD v_grad:v@GRAD", ROPE),
    row("pd_op.fused_bias_act", "fused_bias_act", "x:x bias?:bias dequant_scales?:dequant_scales shift?:shift "
        "smooth?:smooth", "out:out", BIAS_ACT),
    row("pd_op.fast_ln", "fast_ln", "x:x scale:scale bias:bias", "y:y mean:mean invvar:invvar", "epsilon:f32=1e-5"),
    row("pd_op.fast_ln_grad", "fast_ln_grad", "x:x scale:scale mean:mean invvar:invvar y_grad:y@GRAD",
        "x_grad:x@GRAD scale_grad:scale@GRAD bias_grad:bias@GRAD", "epsilon:f32=1e-5"),
    row("pd_op.fast_rms_norm", "fast_rms_norm", "x:x scale:scale", "y:y invvar:invvar", "epsilon:f32=1e-5"),
    row("pd_op.fast_rms_norm_grad", "fast_rms_norm_grad", "x:x scale:scale invvar:invvar y_grad:y@GRAD",
        "x_grad:x@GRAD scale_grad:scale@GRAD", "epsilon:f32=1e-5"),
    row("pd_op.fused_rms_norm_ext", "fused_rms_norm_ext", "x:x scale:scale", "y:y invvar:invvar", "epsilon:f32=1e-5"),
    row("pd_op.fused_rms_norm_ext_grad", "fused_rms_norm_ext_grad", "x:x scale:scale invvar:invvar y_grad:y@GRAD",
        "x_grad:x@GRAD scale_grad:scale@GRAD", "epsilon:f32=1e-5"),
    row("pd_op.fused_bias_dropout_residual_layer_norm", "fused_bias_dropout_residual_layer_norm", BDR_INPUTS,
        f"y:Y {BDR_STATE}", BDR),
    row("pd_op.fused_bias_dropout_residual_layer_norm_grad", "fused_bias_dropout_residual_layer_norm_grad",
        f"{BDR_INPUTS} ln_mean:LnMean ln_variance:LnVariance bias_dropout_residual_out:BiasDropoutResidualOut"
        " dropout_mask_out:DropoutMaskOut y_grad:Y@GRAD",
        "x_grad:X@GRAD residual_grad:Residual@GRAD bias_grad:Bias@GRAD ln_scale_grad:LnScale@GRAD"
        " ln_bias_grad:LnBias@GRAD", BDR),
    row("pd_op.weight_quantize", "weight_quantize", "x:x", "out:out scale:scale",
        "algo:str=weight_only_int8 arch:i32=80 group_size:i32=-1"),
    row("pd_op.weight_dequantize", "weight_dequantize", "x:x scale:scale", "out:out",
        "algo:str=weight_only_int8 group_size:i32=-1"),
    row("pd_op.weight_only_linear", "weight_only_linear", LINEAR_INPUTS, "out:out", LINEAR),
    row("pd_op.weight_only_linear_grad", "weight_only_linear_grad", f"{LINEAR_INPUTS} out_grad:out@GRAD",
        "x_grad:x@GRAD", LINEAR),
    row("pd_op.llm_int8_linear", "llm_int8_linear", LINEAR_INPUTS, "out:out", "threshold:f32=6"),
    row("pd_op.rms_norm", "rms_norm", "x:x scale?:scale", "y:y invvar:invvar", RMS_NORM),
    row("pd_op.rms_norm_grad", "rms_norm_grad", "x:x scale?:scale invvar:invvar y_grad:y@GRAD",
        "x_grad:x@GRAD scale_grad:scale@GRAD", RMS_NORM),
]
