"""Rows: 3-d and transposed convolution, the other poolings, unpooling, interpolation, pixel and channel
shuffles, fold / unfold; forward and grad."""

from __future__ import annotations

from . import row
from .nn_rows import CONV

X_GRAD = "x_grad:X@GRAD"
CONV_TRANSPOSE = ("strides:i32s paddings:i32s output_padding:i32s padding_algorithm:str groups:i32 dilations:i32s "
                  "data_format:str")
CONV_GRADS = "input_grad:Input@GRAD filter_grad:Filter@GRAD"
POOL = ("strides:i64s paddings:i64s ceil_mode:bool exclusive:bool data_format:str pooling_type:str "
        "global_pooling:bool adaptive:bool padding_algorithm:str")
POOL3D = "kernel_size=ksize:i64s " + POOL
LP_POOL = "kernel_size:intarray " + POOL + " norm_type:f32"
WITH_INDEX = "kernel_size=ksize:i32s strides:i32s paddings:i32s global_pooling:bool adaptive:bool ceil_mode:bool"
FRACTIONAL = "output_size:i32s kernel_size:i32s random_u:f32 return_mask:bool"
UNPOOL = "ksize:i32s strides:i32s padding=paddings:i32s data_format:str"
UNPOOL3D = "ksize:i32s strides:i32s paddings:i32s output_size:i32s data_format:str"
MAX_UNPOOL = {"unpooling_type": "max"}
INTERP_INPUTS = "x:X out_size?:OutSize size_tensor?:SizeTensor* scale_tensor?:Scale"
INTERP = ("data_format=data_layout:str out_d:i32 out_h:i32 out_w:i32 scale:f64s interp_method:str "
          "align_corners:bool align_mode:i32")
UNFOLD = "kernel_sizes:i32s strides:i32s paddings:i32s dilations:i32s"
FOLD = "output_sizes:i32s " + UNFOLD


def _interp(method: str) -> list:
    return [row(f"pd_op.{method}_interp", f"{method}_interp_v2", INTERP_INPUTS, "output:Out", INTERP),
            row(f"pd_op.{method}_interp_grad", f"{method}_interp_v2_grad", INTERP_INPUTS + " output_grad:Out@GRAD",
                X_GRAD, INTERP)]


def _shuffle(name: str, attrs: str) -> list:
    return [row(f"pd_op.{name}", name, "x:X", "out:Out", attrs),
            row(f"pd_op.{name}_grad", f"{name}_grad", "out_grad:Out@GRAD", X_GRAD, attrs)]


ROWS = [
    row("pd_op.conv3d", "conv3d", "input:Input filter:Filter", "out:Output", CONV),
    row("pd_op.conv3d_grad", "conv3d_grad", "input:Input filter:Filter out_grad:Output@GRAD", CONV_GRADS, CONV),
    row("pd_op.conv3d_transpose", "conv3d_transpose", "x:Input filter:Filter", "out:Output",
        CONV_TRANSPOSE + " output_size:i32s"),
    row("pd_op.conv3d_transpose_grad", "conv3d_transpose_grad", "x:Input filter:Filter out_grad:Output@GRAD",
        "x_grad:Input@GRAD filter_grad:Filter@GRAD", CONV_TRANSPOSE + " output_size:i32s"),
    row("pd_op.depthwise_conv2d_transpose", "depthwise_conv2d_transpose",
        "x:Input filter:Filter output_size>output_size:ints", "out:Output", CONV_TRANSPOSE),
    row("pd_op.depthwise_conv2d_transpose_grad", "depthwise_conv2d_transpose_grad",
        "x:Input filter:Filter out_grad:Output@GRAD output_size>output_size:ints",
        "x_grad:Input@GRAD filter_grad:Filter@GRAD", CONV_TRANSPOSE),
    # pooling
    row("pd_op.pool3d", "pool3d", "x:X", "out:Out", POOL3D),
    row("pd_op.pool3d_grad", "pool3d_grad", "x:X out:Out out_grad:Out@GRAD", X_GRAD, POOL3D),
    row("pd_op.lp_pool2d", "lp_pool2d", "x:x", "out:out", LP_POOL),
    row("pd_op.lp_pool2d_grad", "lp_pool2d_grad", "x:x out:out out_grad:out@GRAD", "x_grad:x@GRAD", LP_POOL),
    row("pd_op.max_pool2d_with_index", "max_pool2d_with_index", "x:X", "out:Out mask:Mask", WITH_INDEX),
    row("pd_op.max_pool2d_with_index_grad", "max_pool2d_with_index_grad", "x:X mask:Mask out_grad:Out@GRAD", X_GRAD,
        WITH_INDEX),
    row("pd_op.max_pool3d_with_index", "max_pool3d_with_index", "x:X", "out:Out mask:Mask", WITH_INDEX),
    row("pd_op.max_pool3d_with_index_grad", "max_pool3d_with_index_grad", "x:X mask:Mask out_grad:Out@GRAD", X_GRAD,
        WITH_INDEX),
    row("pd_op.fractional_max_pool2d", "fractional_max_pool2d", "x:x", "out:out mask:mask", FRACTIONAL),
    row("pd_op.fractional_max_pool2d_grad", "fractional_max_pool2d_grad", "x:x mask:mask out_grad:out@GRAD",
        "x_grad:x@GRAD", FRACTIONAL),
    row("pd_op.fractional_max_pool3d", "fractional_max_pool3d", "x:x", "out:out mask:mask", FRACTIONAL),
    row("pd_op.fractional_max_pool3d_grad", "fractional_max_pool3d_grad", "x:x mask:mask out_grad:out@GRAD",
        "x_grad:x@GRAD", FRACTIONAL),
    row("pd_op.unpool", "unpool", "x:X indices:Indices output_size>output_size:ints", "out:Out", UNPOOL,
        fixed=MAX_UNPOOL),
    row("pd_op.unpool_grad", "unpool_grad", "x:X indices:Indices out:Out out_grad:Out@GRAD "
                                            "output_size>output_size:ints", X_GRAD, UNPOOL, fixed=MAX_UNPOOL),
    row("pd_op.unpool3d", "unpool3d", "x:X indices:Indices", "out:Out", UNPOOL3D),
    row("pd_op.unpool3d_grad", "unpool3d_grad", "x:X indices:Indices out:Out out_grad:Out@GRAD", X_GRAD, UNPOOL3D),
    # interpolation
    *_interp("linear"), *_interp("bilinear"), *_interp("trilinear"), *_interp("nearest"), *_interp("bicubic"),
    # rearranging
    *_shuffle("pixel_shuffle", "upscale_factor:i32 data_format:str"),
    *_shuffle("pixel_unshuffle", "downscale_factor:i32 data_format:str"),
    *_shuffle("channel_shuffle", "groups:i32 data_format:str"),
    row("pd_op.unfold", "unfold", "x:X", "out:Y", UNFOLD),
    row("pd_op.unfold_grad", "unfold_grad", "x:X out_grad:Y@GRAD", X_GRAD, UNFOLD),
    row("pd_op.fold", "fold", "x:X", "out:Y", FOLD),
    row("pd_op.fold_grad", "fold_grad", "x:X out_grad:Y@GRAD", X_GRAD, FOLD),
]
