"""Rows: the cuDNN frontend fusions and resnet_unit (gradc.ops.cudnn_fusion, resnet_fusion), named
as Paddle 3.3.1's translation of a legacy program holding them names them (tools/paddle_gpu_inference_ops.py)."""

from __future__ import annotations

from . import row

CONV = ("paddings:i32s dilations:i32s strides:i32s padding_algorithm:str=EXPLICIT groups:i32=1 "
        "data_format:str=NHWC")

RESNET_UNIT = ("stride:i32=1 stride_z:i32=1 padding:i32 dilation:i32=1 group:i32=1 momentum:f32=0.9 epsilon:f32=1e-5 "
               "data_format:str=NHWC fuse_add:bool has_shortcut:bool use_global_stats:bool is_test:bool "
               "use_addto:bool act_type:str=relu")

BASIC_BLOCK = " ".join(f"{name}{b}:i32{default}" for name, default in (("stride", "=1"), ("padding", ""),
                                                                     ("dilation", "=1")) for b in "123") + (
    " group:i32=1 momentum:f32=0.9 epsilon:f32=1e-5 data_format:str=NCHW has_shortcut:bool use_global_stats:bool "
    "is_test:bool trainable_statistics:bool act_type:str=relu find_conv_input_max:bool=true")
BRANCH_INPUTS = " ".join(f"{name}{b}:{name.title()}{b}" for b in "12" for name in ("filter", "scale", "bias", "mean",
                                                                                  "var"))
FINDS = " ".join(f"max_{kind}{b}:Max{kind.title()}{b}" for b in "123" for kind in ("input", "filter"))


def _stats(b: str) -> str:
    return f"saved_mean{b}:SavedMean{b} saved_invstd{b}:SavedInvstd{b} mean{b}_out:Mean{b}Out var{b}_out:Var{b}Out"


ROWS = [
    row("pd_op.resnet_basic_block", "resnet_basic_block",
        f"x:X {BRANCH_INPUTS} filter3?:Filter3 scale3?:Scale3 bias3?:Bias3 mean3?:Mean3 var3?:Var3",
        f"out:Y conv1:Conv1 {_stats('1')} conv2:Conv2 conv2_input:Conv2Input {_stats('2')} conv3:Conv3 "
        f"{_stats('3')} {FINDS}", BASIC_BLOCK),
    row("pd_op.resnet_basic_block_grad", "resnet_basic_block_grad",
        "x:X filter1:Filter1 conv1:Conv1 scale1:Scale1 bias1:Bias1 saved_mean1:SavedMean1 saved_invstd1:SavedInvstd1 "
        "filter2:Filter2 conv2:Conv2 conv2_input:Conv2Input scale2:Scale2 bias2:Bias2 saved_mean2:SavedMean2 "
        "saved_invstd2:SavedInvstd2 filter3?:Filter3 conv3?:Conv3 scale3?:Scale3 bias3?:Bias3 "
        f"saved_mean3?:SavedMean3 saved_invstd3?:SavedInvstd3 {FINDS.replace(':', '?:')} out:Y out_grad:Y@GRAD",
        "x_grad:X@GRAD " + " ".join(f"{name}{b}_grad:{name.title()}{b}@GRAD" for b in "123"
                                    for name in ("filter", "scale", "bias")), BASIC_BLOCK),
    row("pd_op.resnet_unit", "resnet_unit",
        "x:X filter_x:FilterX scale_x:ScaleX bias_x:BiasX mean_x:MeanX var_x:VarX z?:Z filter_z?:FilterZ "
        "scale_z?:ScaleZ bias_z?:BiasZ mean_z?:MeanZ var_z?:VarZ",
        "out:Y bit_mask:BitMask conv_x:ConvX saved_mean_x:SavedMeanX saved_invstd_x:SavedInvstdX "
        "running_mean_x:RunningMeanX running_var_x:RunningVarX conv_z:ConvZ saved_mean_z:SavedMeanZ "
        "saved_invstd_z:SavedInvstdZ running_mean_z:RunningMeanZ running_var_z:RunningVarZ", RESNET_UNIT),
    row("pd_op.resnet_unit_grad", "resnet_unit_grad",
        "x:X filter_x:FilterX conv_x:ConvX scale_x:ScaleX bias_x:BiasX saved_mean_x:SavedMeanX "
        "saved_invstd_x:SavedInvstdX z?:Z filter_z?:FilterZ conv_z?:ConvZ scale_z?:ScaleZ bias_z?:BiasZ "
        "saved_mean_z?:SavedMeanZ saved_invstd_z?:SavedInvstdZ out:Y bit_mask:BitMask out_grad:Y@GRAD",
        "x_grad:X@GRAD filter_x_grad:FilterX@GRAD scale_x_grad:ScaleX@GRAD bias_x_grad:BiasX@GRAD z_grad:Z@GRAD "
        "filter_z_grad:FilterZ@GRAD scale_z_grad:ScaleZ@GRAD bias_z_grad:BiasZ@GRAD", RESNET_UNIT),
    row("pd_op.fused_scale_bias_relu_conv_bn", "fused_scale_bias_relu_conv_bn",
        "x:x w:w scale?:scale bias?:bias bn_scale:bn_scale bn_bias:bn_bias input_running_mean:input_running_mean "
        "input_running_var:input_running_var",
        "out:out out_running_mean:out_running_mean out_running_var:out_running_var saved_mean:saved_mean "
        "saved_var:saved_var eq_scale:eq_scale eq_bias:eq_bias",
        f"{CONV} momentum:f32=0.9 epsilon:f32=1e-5 fuse_prologue:bool exhaustive_search:bool "
        "accumulation_count:i64"),
    row("pd_op.fused_dconv_drelu_dbn", "fused_dconv_drelu_dbn",
        "grad_output:grad_output weight:weight grad_output_add?:grad_output_add residual_input?:residual_input "
        "bn1_eqscale?:bn1_eqscale bn1_eqbias?:bn1_eqbias conv_input?:conv_input bn1_mean:bn1_mean "
        "bn1_inv_std:bn1_inv_std bn1_gamma:bn1_gamma bn1_beta:bn1_beta bn1_input:bn1_input bn2_mean?:bn2_mean "
        "bn2_inv_std?:bn2_inv_std bn2_gamma?:bn2_gamma bn2_beta?:bn2_beta bn2_input?:bn2_input",
        "grad_weight:grad_weight grad_bn1_input:grad_bn1_input grad_bn1_gamma:grad_bn1_gamma "
        "grad_bn1_beta:grad_bn1_beta grad_bn2_input:grad_bn2_input grad_bn2_gamma:grad_bn2_gamma "
        "grad_bn2_beta:grad_bn2_beta",
        f"{CONV} fuse_shortcut:bool fuse_dual:bool fuse_add:bool exhaustive_search:bool"),
    row("pd_op.fused_scale_bias_add_relu", "fused_scale_bias_add_relu",
        "x1:x1 scale1:scale1 bias1:bias1 x2:x2 scale2?:scale2 bias2?:bias2", "out:out",
        "fuse_dual:bool exhaustive_search:bool"),
]
