"""Rows: the fused ops Paddle Inference's CPU passes write (gradc.ops.inference_fused, inference_rnn), named as
paddle/phi/ops/yaml/fused_ops.yaml and Paddle 3.3.1's translation of an optimized legacy program name them
(tools/paddle_inference_optimized.py). With enable_new_ir the Predictor saves these in _optimized.json."""

from __future__ import annotations

from . import row

GRU_ATTRS = ("activation:str=tanh gate_activation:str=sigmoid is_reverse:bool use_seq:bool=true origin_mode:bool "
             "force_fp32_output:bool")
LSTM_ATTRS = ("use_peepholes:bool=true is_reverse:bool use_seq:bool=true gate_activation:str=sigmoid "
              "cell_activation:str=tanh candidate_activation:str=tanh scale_data=Scale_data:f32=1 "
              "shift_data=Shift_data:f32 scale_weights=Scale_weights:f32s force_fp32_output:bool")

ROWS = [
    row("pd_op.fusion_repeated_fc_relu", "fusion_repeated_fc_relu", "x:X w:W* bias:Bias*", "relu_out:ReluOut* out:Out"),
    row("pd_op.fusion_seqconv_eltadd_relu", "fusion_seqconv_eltadd_relu", "x:X filter:Filter bias:Bias",
        "out:Out col_mat:ColMat",
        "context_length=contextLength:i32 context_start=contextStart:i32 context_stride=contextStride:i32=1"),
    row("pd_op.fusion_seqpool_cvm_concat", "fusion_seqpool_cvm_concat", "x:X* cvm:CVM", "out:Out",
        "pooltype:str=SUM use_cvm:bool=true axis:i32=1"),
    row("pd_op.fusion_gru", "fusion_gru", "x:X h0?:H0 weight_x:WeightX weight_h:WeightH bias?:Bias",
        "reordered_h0:ReorderedH0 xx:XX batched_input:BatchedInput batched_out:BatchedOut hidden:Hidden", GRU_ATTRS),
    row("pd_op.fusion_lstm", "fusion_lstm", "x:X weight_x:WeightX weight_h:WeightH bias:Bias h0?:H0 c0?:C0",
        "hidden:Hidden cell:Cell xx:XX batched_input:BatchedInput batched_hidden:BatchedHidden "
        "batched_cell:BatchedCell reordered_h0:ReorderedH0 reordered_c0:ReorderedC0 checked_cell:CheckedCell",
        LSTM_ATTRS),
    row("pd_op.fused_embedding_fc_lstm", "fused_embedding_fc_lstm",
        "ids:Ids embeddings:Embeddings weight_h:WeightH bias:Bias h0?:H0 c0?:C0",
        "hidden:Hidden cell:Cell xx:XX batched_input:BatchedInput batched_hidden:BatchedHidden "
        "batched_cell:BatchedCell reordered_h0:ReorderedH0 reordered_c0:ReorderedC0",
        "use_peepholes:bool=true is_reverse:bool use_seq:bool=true gate_activation:str=sigmoid "
        "cell_activation:str=tanh candidate_activation:str=tanh"),
    row("pd_op.attention_lstm", "attention_lstm",
        "x:X c0:C0 h0?:H0 attention_weight:AttentionWeight attention_bias?:AttentionBias "
        "attention_scalar?:AttentionScalar attention_scalar_bias?:AttentionScalarBias lstm_weight:LSTMWeight "
        "lstm_bias:LSTMBias",
        "hidden:Hidden cell:Cell attentioned_x:AttentionedX attention_fc_out:AttentionFCOut lstm_x:LSTMX "
        "lstm_out:LSTMOUT",
        "gate_activation:str=sigmoid cell_activation:str=tanh candidate_activation:str=tanh"),
    row("onednn_op.multi_gru", "multi_gru",
        "x:X weight_x:WeightX* weight_h:WeightH* bias?:Bias* scale_weights?:Scale_weights*", "hidden:Hidden",
        "activation:str=tanh gate_activation:str=sigmoid layers:i32=1 origin_mode:bool mkldnn_data_type:str=float32 "
        "scale_data=Scale_data:f32=1 shift_data=Shift_data:f32 force_fp32_output:bool"),
]
