"""Rows: Paddle 3.3.1's float8 ops (gradc.ops.fp8), with the operand, result and attribute names of its op
definitions (tools/paddle_fp8_programs.py has Paddle load a program of each and checks them)."""

from __future__ import annotations

from . import row

QUANT = ("epsilon:f32 using_1x128_vec_quant:bool input_transpose:bool output_scale_transpose:bool"
         " return_transpose_only:bool using_e5m2:bool using_pow2_scale:bool using_ue8m0_scale:bool")
HALF_GEMM = "transpose_x:bool transpose_y:bool scale:f32 output_dtype:str activation_type:str"
SPLIT = "tokens_per_expert:i64s pow_2_scales:bool"
BLOCKWISE = ("transa:bool transb:bool grad:bool accumulate:bool use_split_accumulator:bool math_sm_count:i32"
             " is_A_1d_scaled:bool is_B_1d_scaled:bool")

ROWS = [
    row("pd_op.fp8_quant_blockwise", "fp8_quant_blockwise", "x:x",
        "out:out scale:scale out_transposed:out_transposed scale_transposed:scale_transposed", QUANT),
    row("pd_op.fused_act_dequant", "fused_act_dequant", "x:x x_scale:x_scale", "out:out"),
    row("pd_op.fused_weighted_swiglu_act_quant", "fused_weighted_swiglu_act_quant", "x:x prob?:prob",
        "out:out scale:scale", "using_pow2_scaling:bool"),
    row("pd_op.fused_swiglu_weighted_bwd", "fused_swiglu_weighted_bwd",
        "o1:o1 do2_s:do2_s unzipped_probs:unzipped_probs", "do1:do1 probs_grad:probs_grad o2_s:o2_s"),
    row("pd_op.fp8_fp8_half_gemm_fused", "fp8_fp8_half_gemm_fused", "x:x y:y bias?:bias", "out:out", HALF_GEMM),
    row("pd_op.moe_gate_dispatch_and_quant", "moe_gate_dispatch_and_quant",
        "x:x gate_logits:gate_logits corr_bias?:corr_bias",
        "out_fp8:out_fp8 scale:scale combine_weights:combine_weights scatter_index:scatter_index"
        " expert_offset:expert_offset expert_id:expert_id", "k:i64 capacity:i64 use_pad:bool use_pow2_scale:bool"),
    row("pd_op.fused_stack_quant", "fused_stack_quant", "x:x*", "out:out scale:scale"),
    row("pd_op.fused_stack_transpose_quant", "fused_stack_transpose_quant", "x:x*", "out:out scale:scale"),
    # the legacy ops' TokensPerExpertTensor(List) have no PIR operand
    row("pd_op.fused_transpose_split_quant", "fused_transpose_split_quant",
        "x:x input_scales?:input_scales ~TokensPerExpertTensor ~TokensPerExpertTensorList", "out:out* scales:scales*",
        SPLIT),
    row("pd_op.fused_transpose_wlch_split_quant", "fused_transpose_wlch_split_quant",
        "x:x ~TokensPerExpertTensor ~TokensPerExpertTensorList", "out:out* scales:scales*", SPLIT),
    # the in-place op only: output is input_result's var; pre_gelu_out and workspace_out pass their operands on
    # (Paddle's API passes empty tensors for bias and pre_gelu: null values here)
    row("pd_op.fp8_gemm_blockwise_", "fp8_gemm_blockwise", "A:A A_scale:A_scale B:B B_scale:B_scale"
        " input_result:input_result bias?:bias pre_gelu?:pre_gelu workspace?:workspace",
        "output:output&input_result pre_gelu_out:pre_gelu_out workspace_out:workspace_out", BLOCKWISE),
]
