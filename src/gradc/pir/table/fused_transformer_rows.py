"""Rows: paddle.incubate.nn's GPU-only fused transformer layers (gradc.ops.fused_ffn, ...), with the operand,
result and attribute names and order of Paddle 3.3.1's PIR op definitions (its get_input_names / get_output_names /
get_attr_names of the ops, read by tools/paddle_gpu_only_handwritten.py)."""

from __future__ import annotations

from . import row

FFN = ("pre_layer_norm:bool ln1_epsilon:f32=1e-5 ln2_epsilon:f32=1e-5 act_method:str=gelu"
       " dropout1_prob=dropout1_rate:f32=0.5 dropout2_prob=dropout2_rate:f32=0.5"
       " dropout1_implementation:str=downgrade_in_infer dropout2_implementation:str=downgrade_in_infer is_test:bool"
       " dropout1_fix_seed:bool dropout2_fix_seed:bool dropout1_seed_val=dropout1_seed:i32"
       " dropout2_seed_val=dropout2_seed:i32 add_residual:bool=true ring_id:i32=-1")
FFN_STATE = ("dropout1_mask:Dropout1Mask dropout2_mask:Dropout2Mask ln1_mean:Ln1Mean ln1_variance:Ln1Variance"
             " ln2_mean:Ln2Mean ln2_variance:Ln2Variance linear1_out:Linear1Out ln1_out:Ln1Out"
             " dropout1_out:Dropout1Out dropout2_out:Dropout2Out")

ROWS = [
    row("pd_op.fused_feedforward", "fused_feedforward",
        "x:X dropout1_seed?:Dropout1Seed dropout2_seed?:Dropout2Seed linear1_weight:Linear1Weight"
        " linear1_bias?:Linear1Bias linear2_weight:Linear2Weight linear2_bias?:Linear2Bias ln1_scale?:Ln1Scale"
        " ln1_bias?:Ln1Bias ln2_scale?:Ln2Scale ln2_bias?:Ln2Bias", f"out:Out {FFN_STATE}", FFN),
    row("pd_op.fused_feedforward_grad", "fused_feedforward_grad",
        "out_grad:Out@GRAD x:X linear1_weight:Linear1Weight linear1_bias?:Linear1Bias linear2_weight:Linear2Weight"
        " dropout1_mask:Dropout1Mask dropout2_mask:Dropout2Mask linear1_out:Linear1Out dropout1_out:Dropout1Out"
        " dropout2_out?:Dropout2Out ln1_scale?:Ln1Scale ln1_bias?:Ln1Bias ln1_out?:Ln1Out ln1_mean?:Ln1Mean"
        " ln1_variance?:Ln1Variance ln2_scale?:Ln2Scale ln2_bias?:Ln2Bias ln2_mean?:Ln2Mean"
        " ln2_variance?:Ln2Variance linear2_bias?:Linear2Bias",
        "x_grad:X@GRAD linear1_weight_grad:Linear1Weight@GRAD linear1_bias_grad:Linear1Bias@GRAD"
        " linear2_weight_grad:Linear2Weight@GRAD linear2_bias_grad:Linear2Bias@GRAD ln1_scale_grad:Ln1Scale@GRAD"
        " ln1_bias_grad:Ln1Bias@GRAD ln2_scale_grad:Ln2Scale@GRAD ln2_bias_grad:Ln2Bias@GRAD", FFN),
]
