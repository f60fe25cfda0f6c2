"""Rows: the ops a CUDA build's Python API writes for ordinary layers (gradc.ops.gpu_build, docs/gpu-build.md), with
the operand, result and attribute names Paddle 3.3.1's op definitions give them."""

from __future__ import annotations

from . import row

STAT = "axis:i64s keepdim:bool unbiased:bool correction:f64=1.0"
NANSUM = "axis:intarray dtype:dtype keepdim:bool"
CONV_BIAS = "strides:i32s paddings:i32s padding_algorithm:str groups:i32 dilations:i32s data_format:str"
CONV_BIAS_GRADS = "input_grad:input@GRAD filter_grad:filter@GRAD bias_grad:bias@GRAD"

ROWS = [
    row("pd_op.linear_v2", "linear_v2", "input:input weight:weight bias:bias", "out:out", "transpose_weight:bool"),
    row("pd_op.linear_v2_grad", "linear_v2_grad", "input:input weight:weight bias:bias out_grad:out@GRAD",
        "input_grad:input@GRAD weight_grad:weight@GRAD bias_grad:bias@GRAD", "transpose_weight:bool"),
    row("pd_op.var", "var", "x:x", "out:out", STAT),
    row("pd_op.var_grad", "var_grad", "x:x out_grad:out@GRAD", "x_grad:x@GRAD", STAT),
    row("pd_op.std", "std", "x:x", "out:out", STAT),
    row("pd_op.std_grad", "std_grad", "x:x out:out out_grad:out@GRAD", "x_grad:x@GRAD", STAT),
    row("pd_op.nansum", "nansum", "x:x", "out:out", NANSUM),
    row("pd_op.nansum_grad", "nansum_grad", "x:x out_grad:out@GRAD", "x_grad:x@GRAD",
        "axis:intarray keepdim:bool reduce_all:bool"),
    row("pd_op.depthwise_conv2d_bias", "depthwise_conv2d_bias", "input:input filter:filter bias?:bias", "out:out",
        CONV_BIAS),
    row("pd_op.depthwise_conv2d_bias_grad", "depthwise_conv2d_bias_grad",
        "input:input filter:filter bias?:bias out_grad:out@GRAD", CONV_BIAS_GRADS, CONV_BIAS),
    row("pd_op.depthwise_conv3d_bias", "depthwise_conv3d_bias", "input:input filter:filter bias?:bias", "out:out",
        CONV_BIAS),
    row("pd_op.depthwise_conv3d_bias_grad", "depthwise_conv3d_bias_grad",
        "input:input filter:filter bias?:bias out_grad:out@GRAD", CONV_BIAS_GRADS, CONV_BIAS),
]
