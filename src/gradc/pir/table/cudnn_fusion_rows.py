"""Rows: the cuDNN frontend fusions and resnet_unit (gradc.ops.cudnn_fusion, cudnn_fusion_dconv, resnet_unit), named
as Paddle 3.3.1's translation of a legacy program holding them names them (tools/paddle_gpu_inference_ops.py)."""

from __future__ import annotations

from . import row

CONV = ("paddings:i32s dilations:i32s strides:i32s padding_algorithm:str=EXPLICIT groups:i32=1 "
        "data_format:str=NHWC")

ROWS = [
    row("pd_op.fused_scale_bias_relu_conv_bn", "fused_scale_bias_relu_conv_bn",
        "x:x w:w scale?:scale bias?:bias bn_scale:bn_scale bn_bias:bn_bias input_running_mean:input_running_mean "
        "input_running_var:input_running_var",
        "out:out out_running_mean:out_running_mean out_running_var:out_running_var saved_mean:saved_mean "
        "saved_var:saved_var eq_scale:eq_scale eq_bias:eq_bias",
        f"{CONV} momentum:f32=0.9 epsilon:f32=1e-5 fuse_prologue:bool exhaustive_search:bool "
        "accumulation_count:i64"),
    row("pd_op.fused_scale_bias_add_relu", "fused_scale_bias_add_relu",
        "x1:x1 scale1:scale1 bias1:bias1 x2:x2 scale2?:scale2 bias2?:bias2", "out:out",
        "fuse_dual:bool exhaustive_search:bool"),
]
