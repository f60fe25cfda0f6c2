"""Rows: the fused ops of Paddle Inference's GPU (and XPU) passes and BuildStrategy's elementwise-activation fusion
(gradc.ops.inference_gpu, inference_gpu_extra, squeeze_excitation, fused_elemwise, and inference_fused's
fusion_seqpool_concat / fusion_squared_mat_sub), named as Paddle 3.3.1's translation of a legacy program holding them
names them (tools/paddle_gpu_inference_ops.py)."""

from __future__ import annotations

from . import row

ELEMWISE = "functor_list:strs axis:i32=-1 scale:f32 save_intermediate_out:bool"
CONV = ("strides:i32s paddings:i32s padding_algorithm:str=EXPLICIT dilations:i32s groups:i32=1 data_format:str=NCHW "
        "activation:str=relu split_channels:i32s exhaustive_search:bool workspace_size_MB:i32=32 fuse_alpha:f32")

ROWS = [
    row("pd_op.fused_elemwise_activation", "fused_elemwise_activation", "x:X y:Y",
        "out:Out intermediate_out:IntermediateOut", ELEMWISE),
    row("pd_op.fused_elemwise_activation_grad", "fused_elemwise_activation_grad",
        "x:X y:Y out:Out intermediate_out:IntermediateOut out_grad:Out@GRAD", "x_grad:X@GRAD y_grad:Y@GRAD", ELEMWISE),
    row("pd_op.fused_elemwise_add_activation", "fused_elemwise_add_activation", "x:X y:Y",
        "out:Out intermediate_out:IntermediateOut", ELEMWISE),
    row("pd_op.fused_elemwise_add_activation_grad", "fused_elemwise_add_activation_grad",
        "x?:X y:Y out:Out intermediate_out?:IntermediateOut out_grad:Out@GRAD", "x_grad:X@GRAD y_grad:Y@GRAD",
        ELEMWISE),
    row("pd_op.fusion_squared_mat_sub", "fusion_squared_mat_sub", "x:X y:Y",
        "squared_x:SquaredX squared_y:SquaredY squared_xy:SquaredXY out:Out", "scalar:f32=1"),
    row("pd_op.fusion_seqpool_concat", "fusion_seqpool_concat", "x:X*", "out:Out", "pooltype:str=SUM axis:i32=1"),
    row("pd_op.self_dp_attention", "self_dp_attention", "x:X", "out:Out", "alpha:f32=1 head_number:i32=1"),
    row("pd_op.multihead_matmul", "multihead_matmul", "input:Input w:W bias:Bias bias_qk?:BiasQK", "out:Out",
        "transpose_q=transpose_Q:bool transpose_k=transpose_K:bool=true transpose_v=transpose_V:bool alpha:f32=1 "
        "head_number:i32=1"),
    row("pd_op.skip_layernorm", "skip_layernorm", "x:X y:Y scale:Scale bias:Bias", "out:Out",
        "epsilon:f32=1e-5 begin_norm_axis:i32=-1"),
    row("pd_op.fused_embedding_eltwise_layernorm", "fused_embedding_eltwise_layernorm",
        "ids:Ids* embs:Embs* bias:Bias scale:Scale", "out:Out", "epsilon:f32=1e-5"),
    row("pd_op.fused_fc_elementwise_layernorm", "fused_fc_elementwise_layernorm",
        "x:X w:W y:Y bias0?:Bias0 scale?:Scale bias1?:Bias1", "out:Out mean:Mean variance:Variance",
        "x_num_col_dims:i32=1 activation_type:str epsilon:f32=1e-5 begin_norm_axis:i32=1"),
    row("pd_op.fused_conv2d_add_act", "fused_conv2d_add_act",
        "input:Input filter:Filter bias?:Bias residual_data?:ResidualData", "output:Output outputs:Outputs*", CONV),
    row("pd_op.fusion_transpose_flatten_concat", "fusion_transpose_flatten_concat", "x:X*", "out:Out",
        "trans_axis:i32s flatten_axis:i32=1 concat_axis:i32"),
    row("pd_op.yolo_box_head", "yolo_box_head", "x:X", "out:Out", "anchors:i32s class_num:i32=1"),
    row("pd_op.qkv_unpack_mha", "qkv_unpack_mha", "q:q k:k v:v src_mask?:src_mask", "out:out"),
    row("pd_op.yolo_box_post", "yolo_box_post",
        "boxes0:Boxes0 boxes1:Boxes1 boxes2:Boxes2 image_shape:ImageShape image_scale:ImageScale",
        "out:Out nms_rois_num:NmsRoisNum",
        "anchors0:i32s anchors1:i32s anchors2:i32s class_num:i32=1 conf_thresh:f32=0.01 downsample_ratio0:i32=32 "
        "downsample_ratio1:i32=16 downsample_ratio2:i32=8 clip_bbox:bool=true scale_x_y:f32=1 nms_threshold:f32=0.45"),
    row("pd_op.squeeze_excitation_block", "squeeze_excitation_block",
        "x:x filter:filter filter_max:filter_max bias?:bias branch?:branch", "out:out",
        "act_type:i32s act_param:f32s filter_dims:i32s"),
    row("pd_op.fused_token_prune", "fused_token_prune", "attn:Attn x:X mask:Mask new_mask:NewMask",
        "slimmed_x:SlimmedX cls_inds:CLSInds", "keep_first_token:bool=true keep_order:bool"),
]
