"""Rows: paddle.incubate.nn's GPU-only fused transformer layers (gradc.ops.fused_ffn, fused_attention,
fused_multi_transformer, fused_dropout), with the operand, result and attribute names and order of Paddle 3.3.1's
PIR op definitions (its get_input_names / get_output_names / get_attr_names of the ops, read by
tools/paddle_gpu_only_handwritten.py and tools/paddle_gpu_only_translated.py)."""

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

ATTENTION = ("num_heads:i32=-1 transpose_qkv_wb:bool pre_layer_norm:bool epsilon:f32=1e-5 attn_dropout_rate:f32=0.5"
             " is_test:bool attn_dropout_fix_seed:bool=true attn_dropout_seed:i32"
             " attn_dropout_implementation:str=upscale_in_train dropout_rate:f32=0.5 dropout_fix_seed:bool=true"
             " dropout_seed:i32 dropout_implementation:str=downgrade_in_infer ln_epsilon:f32=1e-5"
             " add_residual:bool=true ring_id:i32=-1")
ATTENTION_STATE = ("ln_mean:LnMean ln_var:LnVariance ln_out:LnOut qkv_out:QKVOut qkv_bias_out:QKVBiasOut"
                   " transpose_out_2:TransposeOut2 qk_out:QKOut qktv_out:QKTVOut softmax_out:SoftmaxOut"
                   " attn_dropout_mask_out:AttnDropoutMaskOut attn_dropout_out:AttnDropoutOut src_mask_out:SrcMaskOut"
                   " fmha_out:FMHAOut out_linear_out:OutLinearOut dropout_mask_out:DropoutMaskOut ln_mean_2:Ln2Mean"
                   " ln_var_2:Ln2Variance bias_dropout_residual_out:BiasDropoutResidualOut")

ROWS += [
    row("pd_op.fused_attention", "fused_attention",
        "x:X ln_scale?:LnScale ln_bias?:LnBias qkv_weight:QKVW qkv_bias?:QKVBias cache_kv?:CacheKV src_mask?:SrcMask"
        " out_linear_weight:OutLinearW out_linear_bias?:OutLinearBias ln_scale_2?:Ln2Scale ln_bias_2?:Ln2Bias",
        f"{ATTENTION_STATE} cache_kv_out:CacheKVOut out:Y", ATTENTION),
    row("pd_op.fused_attention_grad", "fused_attention_grad",
        "out_grad:Y@GRAD x:X qkv_weight:QKVW qkv_bias?:QKVBias qkv_bias_out?:QKVBiasOut src_mask?:SrcMask"
        " src_mask_out?:SrcMaskOut out_linear_weight:OutLinearW out_linear_bias?:OutLinearBias ln_scale?:LnScale"
        " ln_bias?:LnBias ln_scale_2?:Ln2Scale ln_bias_2?:Ln2Bias ln_out?:LnOut ln_mean?:LnMean ln_var?:LnVariance"
        " ln_mean_2?:Ln2Mean ln_var_2?:Ln2Variance bias_dropout_residual_out?:BiasDropoutResidualOut qkv_out:QKVOut"
        " transpose_out_2:TransposeOut2 qk_out:QKOut qktv_out:QKTVOut softmax_out:SoftmaxOut"
        " attn_dropout_mask_out?:AttnDropoutMaskOut attn_dropout_out?:AttnDropoutOut fmha_out:FMHAOut"
        " out_linear_out:OutLinearOut dropout_mask_out?:DropoutMaskOut",
        "qkv_bias_grad:QKVBias@GRAD qkv_bias_out_grad:QKVBiasOut@GRAD src_mask_out_grad:SrcMaskOut@GRAD"
        " out_linear_bias_grad:OutLinearBias@GRAD ln_scale_grad:LnScale@GRAD ln_bias_grad:LnBias@GRAD"
        " ln_scale_2_grad:Ln2Scale@GRAD ln_bias_2_grad:Ln2Bias@GRAD x_grad:X@GRAD qkv_weight_grad:QKVW@GRAD"
        " out_linear_weight_grad:OutLinearW@GRAD ln_out_grad:LnOut@GRAD"
        " bias_dropout_residual_out_grad:BiasDropoutResidualOut@GRAD qkv_out_grad:QKVOut@GRAD"
        " qktv_out_grad:QKTVOut@GRAD transpose_out_2_grad:TransposeOut2@GRAD qk_out_grad:QKOut@GRAD"
        " softmax_out_grad:SoftmaxOut@GRAD attn_dropout_out_grad:AttnDropoutOut@GRAD fmha_out_grad:FMHAOut@GRAD"
        " out_linear_out_grad:OutLinearOut@GRAD", ATTENTION),
]

MULTI = ("pre_layer_norm:bool=true epsilon:f32=1e-5 residual_alpha:f32=1 dropout_rate:f32=0.5 rotary_emb_dims:i32"
         " is_test:bool dropout_implementation:str=downgrade_in_infer act_method:str=gelu trans_qkvw:bool=true"
         " ring_id:i32=-1 norm_type:str=layernorm use_neox_rotary_style:bool=true gqa_group_size:i32=-1")
ROWS.append(row(
    "pd_op.fused_multi_transformer_", "fused_multi_transformer",
    "x:x ln_scales:ln_scales* ln_biases?:ln_biases* qkv_weights:qkv_weights* qkv_biases?:qkv_biases*"
    " cache_kvs?:cache_kvs* pre_caches?:pre_caches* rotary_tensor?:rotary_tensor beam_offset?:beam_offset"
    " time_step?:time_step seq_lengths?:seq_lengths src_mask?:src_mask out_linear_weights:out_linear_weights*"
    " out_linear_biases?:out_linear_biases* ffn_ln_scales:ffn_ln_scales* ffn_ln_biases?:ffn_ln_biases*"
    " ffn1_weights:ffn1_weights* ffn1_biases?:ffn1_biases* ffn2_weights:ffn2_weights* ffn2_biases?:ffn2_biases*",
    "cache_kv_outs:cache_kv_outs*&cache_kvs out:out", MULTI))

DROPOUT_ADD = "p:f32=0.5 is_test:bool mode:str=upscale_in_train seed:i32 fix_seed:bool"
ROWS += [
    row("pd_op.fused_dropout_add", "fused_dropout_add", "x:x y:y seed_tensor?:seed_tensor ~PTensor",
        "out:out seed_offset:seed_offset", DROPOUT_ADD),
    row("pd_op.fused_dropout_add_grad", "fused_dropout_add_grad", "seed_offset:seed_offset out_grad:out@GRAD ~PTensor",
        "x_grad:x@GRAD y_grad:y@GRAD", "p:f32=0.5 is_test:bool mode:str=upscale_in_train fix_seed:bool"),
]
