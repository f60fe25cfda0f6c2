"""Rows: paddle.incubate.layers' ops (gradc.ops.incubate), correlation (gradc.ops.correlation) and
paddle.incubate.nn.functional's fused_gemm_epilogue (gradc.ops.fused_gemm)."""

from __future__ import annotations

from . import row

COLUMNS = "start_index:i32 length:i32=-1"
CORRELATION = "pad_size:i32 kernel_size:i32 max_displacement:i32 stride1:i32 stride2:i32 corr_type_multiply:i32=1"
RANKS = "max_rank=MaxRank:i32=3 max_size=MaxSize:i32"
SEQPOOL = "pooltype:str=SUM pad_value:f32 use_cvm:bool=true cvm_offset:i32=2"
GEMM = "trans_x:bool trans_y:bool"

ROWS = [
    row("pd_op.partial_sum", "partial_sum", "x:X*", "out:Out", COLUMNS),
    row("pd_op.partial_sum_grad", "partial_sum_grad", "x:X* out_grad:Out@GRAD", "x_grad:X@GRAD*", COLUMNS),
    row("pd_op.partial_concat", "partial_concat", "x:X*", "out:Out", COLUMNS),
    row("pd_op.partial_concat_grad", "partial_concat_grad", "x:X* out_grad:Out@GRAD", "x_grad:X@GRAD*", COLUMNS),
    row("pd_op.shuffle_batch", "shuffle_batch", "x:X seed:Seed", "out:Out shuffle_idx:ShuffleIdx seed_out:SeedOut",
        "startup_seed:i32"),
    row("pd_op.shuffle_batch_grad", "shuffle_batch_grad", "shuffle_idx:ShuffleIdx out_grad:Out@GRAD", "x_grad:X@GRAD",
        "startup_seed:i32"),
    row("pd_op.tdm_child", "tdm_child", "x:X tree_info:TreeInfo", "child:Child leaf_mask:LeafMask",
        "child_nums:i32 dtype:dtype=int32"),
    row("pd_op.tdm_sampler", "tdm_sampler", "x:X travel:Travel layer:Layer", "out:Out labels:Labels mask:Mask",
        "output_positive:bool=true neg_samples_num_list:i32s layer_offset:i32s seed:i32 dtype:i32=2"),
    row("pd_op.batch_fc", "batch_fc", "input:Input w:W bias:Bias", "out:Out"),
    row("pd_op.batch_fc_grad", "batch_fc_grad", "input:Input w:W bias:Bias out_grad:Out@GRAD",
        "input_grad:Input@GRAD w_grad:W@GRAD bias_grad:Bias@GRAD"),
    row("pd_op.rank_attention", "rank_attention", "x:X rank_offset:RankOffset rank_param:RankParam",
        "input_help:InputHelp out:Out ins_rank:InsRank", RANKS),
    row("pd_op.rank_attention_grad", "rank_attention_grad",
        "x:X rank_offset:RankOffset rank_param:RankParam input_help:InputHelp ins_rank:InsRank out_grad:Out@GRAD",
        "rank_param_grad:RankParam@GRAD", RANKS),
    row("pd_op.correlation", "correlation", "input1:Input1 input2:Input2", "out:Output", CORRELATION),
    row("pd_op.correlation_grad", "correlation_grad", "input1:Input1 input2:Input2 out_grad:Output@GRAD",
        "input1_grad:Input1@GRAD input2_grad:Input2@GRAD", CORRELATION),
    row("pd_op.fused_seqpool_cvm", "fused_seqpool_cvm", "x:X* cvm:CVM", "out:Out*", SEQPOOL),
    row("pd_op.fused_seqpool_cvm_grad", "fused_seqpool_cvm_grad", "x:X* cvm:CVM out_grad:Out@GRAD*",
        "x_grad:X@GRAD* cvm_grad:CVM@GRAD", SEQPOOL),
    # without an activation Paddle's reserve_space is a null value, which gradc leaves unwritten
    row("pd_op.fused_gemm_epilogue", "fused_gemm_epilogue", "x:X y:Y bias:Bias", "out:Out reserve_space:ReserveSpace",
        f"{GEMM} activation:str=none"),
    row("pd_op.fused_gemm_epilogue_grad", "fused_gemm_epilogue_grad",
        "x:X y:Y reserve_space?:ReserveSpace out_grad:DOut", "x_grad:DX y_grad:DY bias_grad:DBias",
        f"{GEMM} activation_grad:str=none"),
]
