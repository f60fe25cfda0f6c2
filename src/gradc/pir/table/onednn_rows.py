"""Rows: the onednn_op dialect Paddle 3.3.1's oneDNN passes write into a PIR program (a Predictor with enable_mkldnn
and enable_new_ir saves it as _optimized.json; tools/paddle_onednn_pir.py). An onednn_op.X that is pd_op.X run by a
oneDNN kernel translates as pd_op.X's row; its extra attributes are int8 / bfloat16 settings, which gradc computes
only at their float32 values (other values are refused by name), and batch_norm's fuse_with_relu, which it keeps.
The fused ops map to the legacy fused ops of gradc.ops.inference_fused, attribute names as onednn.yaml spells them."""

from __future__ import annotations

from dataclasses import replace

from ...ir import VarType
from ...ops.inference_fused import FUSED_TRANSPOSE, fused_transpose_shape
from . import row

# the dense ops of 3.3.1's onednn dialect that are their pd_op namesake (libpaddle's op names, fused ones aside)
ONEDNN_PLAIN = (
    "abs add add_n bilinear_interp cast clip concat conv2d conv2d_transpose conv3d depthwise_conv2d divide elu exp "
    "expand flatten full gaussian gelu hardswish layer_norm leaky_relu log_softmax lrn matmul max mean min mish "
    "multiply nearest_interp pad pad3d pool2d prelu prior_box relu relu6 reshape round scale shape shuffle_channel "
    "sigmoid slice softmax softplus split split_with_num sqrt squeeze stack subtract sum swish tanh transpose "
    "batch_norm_ fusion_gru fusion_lstm").split()
# an extra attribute -> the values at which the oneDNN kernel computes what the pd_op does in float32
FLOAT32_VALUES = {"mkldnn_data_type": ("float32",), "onednn_data_type": ("", "float32"), "use_quantizer": (False,),
                  "scale_x": (1.0,), "scale_y": (1.0, [1.0]), "scale_out": (1.0,)}
KEPT = ("fuse_with_relu",)   # batch_norm's relu (gradc's legacy batch_norm applies it)

CONV = ("strides:i32s paddings:i32s padding_algorithm:str dilations:i32s groups:i32 data_format:str "
        "mkldnn_data_type:str=float32 fuse_activation:str fuse_residual_connection:bool force_fp32_output:bool "
        "fuse_alpha:f32 fuse_beta:f32 scale_in=Scale_in:f32=1 scale_out=Scale_out:f32=1 "
        "scale_in_eltwise=Scale_in_eltwise:f32=1 scale_weights=Scale_weights:f32s")
ELEMENTWISE = ("axis:i32=-1 fuse_activation:str fuse_alpha:f32 fuse_beta:f32 fused_output_scale:f32=1 "
               "fused_unsqueeze2_axes:i32s scale_x:f32=1 scale_y:f32=1 scale_out:f32=1")
MATMUL = ("trans_x:bool trans_y:bool matmul_alpha:f32=1 fuse_activation:str fuse_alpha:f32 fuse_beta:f32 "
          "fused_output_scale:f32=1 fused_reshape_x=fused_reshape_X:i32s fused_transpose_x=fused_transpose_X:i32s "
          "fused_reshape_y=fused_reshape_Y:i32s fused_transpose_y=fused_transpose_Y:i32s "
          "fused_reshape_out=fused_reshape_Out:i32s fused_transpose_out=fused_transpose_Out:i32s "
          "mkldnn_data_type:str scale_x=Scale_x:f32=1 scale_y=Scale_y:f32=1 scale_in_eltwise=Scale_in_eltwise:f32 "
          "scale_out=Scale_out:f32=1 force_fp32_output:bool")
TRANSPOSE = ("axis:i32s fused_squeeze2_axes:i32s fused_unsqueeze2_axes:i32s fused_reshape2_shape:i32s scale:f32=1 "
             "shift:f32 output_data_type:str")


def undeclared_results(legacy, op, ctx) -> None:
    """Paddle's translator types a var cpu_quantize_pass left undeclared (a quantize's or an int8 op's output) as
    bool []: gradc leaves it undeclared, so the int8 kernel's type and shape stand (no oneDNN op writes a bool)."""
    for names in legacy.outputs.values():
        for name in names:
            var = ctx.block.find_var(name)
            if var is not None and var.dtype == VarType.BOOL and var.shape == []:
                var.dtype = var.shape = None


def _settings(values: dict, int8: bool = False):
    def hook(legacy, op, ctx) -> None:
        """Refuses an extra attribute at a value gradc does not compute (int8 only where gradc runs oneDNN's int8
        kernel, bfloat16 nowhere); keeps fuse_with_relu."""
        for name, allowed in values.items():
            attr = op.attrs.get(name)
            if attr is not None and attr.plain() not in allowed:
                raise ctx.fail(op, f"attribute '{name}' = {attr.plain()!r:.40} makes oneDNN compute in int8 or "
                                   f"bfloat16; gradc computes this op only at {name} one of {list(allowed)}")
        for name in KEPT:
            if (attr := op.attrs.get(name)) is not None:
                legacy.set_attr(name, attr.plain())
        if int8:
            undeclared_results(legacy, op, ctx)
    return hook


float32_only = _settings(FLOAT32_VALUES)
# the ops whose int8 kernel gradc runs (on a quantize's int8 / uint8 output): mkldnn_data_type int8 marks them
# (their scales are attributes of the legacy op, or of none for pool2d)
int8_or_float32 = _settings({"mkldnn_data_type": ("float32", "int8"), "onednn_data_type": ("", "float32", "int8"),
                             "use_quantizer": (False,)}, int8=True)
INT8_PLAIN = ("pool2d",)


def reshaped_result(legacy, op, ctx) -> None:
    """Paddle types the result by the transpose alone (TransposeInferMeta); it holds the fused reshape's dims."""
    float32_only(legacy, op, ctx)
    x, out = ctx.block.find_var(legacy.inputs["X"][0]), ctx.block.find_var(legacy.outputs["Out"][0])
    if x.shape is not None:
        out.shape = fused_transpose_shape(x.shape, lambda name: legacy.attrs.get(name, FUSED_TRANSPOSE.attrs[name]))


def _chained(first, then):
    if then is None:
        return first

    def both(legacy, op, ctx) -> None:
        first(legacy, op, ctx)
        then(legacy, op, ctx)
    return both


def mirrored(table: dict) -> list:
    """onednn_op.X for each plain op whose pd_op.X gradc translates (import only: export writes pd_op.X)."""
    rows = []
    for name in ONEDNN_PLAIN:
        base = table.get(f"pd_op.{name}")
        if base is None or f"onednn_op.{name}" in table:
            continue
        if base.special is not None:
            rows.append(replace(base, pir=f"onednn_op.{name}"))
        else:
            settings = int8_or_float32 if name in INT8_PLAIN else float32_only
            rows.append(replace(base, pir=f"onednn_op.{name}", hook=_chained(settings, base.hook),
                                when=lambda legacy, exporter: False))
    return rows


ROWS = [
    row("onednn_op.fused_conv2d", "fused_conv2d", "input:Input filter:Filter bias?:Bias residual_param?:ResidualData",
        "output:Output", CONV, hook=int8_or_float32),
    *(row(f"onednn_op.fused_elementwise_{op}", f"fused_elementwise_{op}", "x:X y:Y", "out:Out", ELEMENTWISE,
          hook=float32_only)
      for op in ("add", "sub", "mul", "div")),
    row("onednn_op.fused_matmul", "fused_matmul", "x:X y:Y residual_data?:ResidualData", "out:Out", MATMUL,
        hook=int8_or_float32),
    row("onednn_op.fused_softplus", "fused_softplus", "x:X", "out:Out",
        "beta:f32=1 threshold:f32=20 fuse_activation:str fuse_alpha:f32 fuse_beta:f32"),
    row("onednn_op.fused_transpose", "fused_transpose", "x:X", "out:Out", TRANSPOSE, hook=reshaped_result),
]
