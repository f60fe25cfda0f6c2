"""Rows: the onednn_op dialect's ops that are not a pd_op on a oneDNN kernel nor a fused float op of
gradc.ops.inference_fused: the int8 reorders (gradc.ops.onednn_quant), the conv bias fusions (gradc.ops.onednn_conv),
the legacy matmul forms (pd_op.legacy_matmul is the v1 matmul, pd_op.matmul_with_flatten is mul; Paddle's
translator writes a legacy mul with use_mkldnn as onednn_op.matmul_with_flatten), and the in-place `_` forms of the
plain ops, onednn_op's and the pd_op ones gradc lacked (``inplace``). Names and attributes as Paddle 3.3.1's
translation of each legacy op spells them (tools/paddle_onednn_ops.py). Export writes none of them: the legacy ops
keep their own export."""

from __future__ import annotations

from dataclasses import replace

from . import import_only, row
from .onednn_rows import CONV, float32_only, undeclared_results

NO_EXPORT = {"when": import_only}
# the oneDNN extras of a conv transpose, a mul and a v1 matmul (their float32 values: gradc.pir.table.onednn_rows)
TRANSPOSE = ("strides:i32s paddings:i32s output_padding:i32s padding_algorithm:str groups:i32 dilations:i32s "
             "data_format:str is_test:bool force_fp32_output:bool mkldnn_data_type:str=float32 fuse_relu:bool "
             "fuse_activation:str fuse_alpha:f32 fuse_beta:f32")
MUL = "x_num_col_dims:i32=1 y_num_col_dims:i32=1"
# (PIR-only: gradc's mul and v1 matmul declare no oneDNN attribute)
MUL_ONEDNN = f"{MUL} scale_x=-:f32=1 scale_y=-:f32s scale_out=-:f32=1 force_fp32_output=-:bool"
LEGACY_MATMUL = "transpose_x=transpose_X:bool transpose_y=transpose_Y:bool alpha:f32=1"
ONEDNN_MATMUL = "mkldnn_data_type=-:str=float32"
# the in-place ops of 3.3.1's onednn dialect (libpaddle's op names) whose out-of-place form gradc translates
INPLACE = ("abs_ add_ cast_ clip_ divide_ elu_ exp_ flatten_ leaky_relu_ multiply_ relu_ reshape_ round_ scale_ "
           "sigmoid_ softmax_ sqrt_ squeeze_ subtract_ tanh_ transpose_ sgd_").split()


# in-place ops whose result has another shape or dtype than the operand: a var of its own (Paddle's inplace pass
# makes an op in place only when nothing reads the operand after it, so no reader sees the difference)
RESHAPED = ("reshape_", "squeeze_", "flatten_", "transpose_", "cast_")


def _written_over(base, pir: str):
    """``base`` with its first result written over its first operand's var (a new var for RESHAPED)."""
    if pir.split(".")[1] in RESHAPED:
        return replace(base, pir=pir, **NO_EXPORT)
    first = replace(base.results[0], inplace=base.operands[0].name)
    return replace(base, pir=pir, results=(first, *base.results[1:]), **NO_EXPORT)


def inplace(table: dict) -> list:
    """onednn_op.X_ as pd_op.X_ where gradc has that row, else as onednn_op.X with the first result written over
    the first operand's var; and pd_op.X_ likewise from pd_op.X where gradc lacks it (the dialect's passes leave
    some in-place ops, divide_, as pd_op). Import only."""
    rows = []
    for name in INPLACE:
        plain = table.get(f"pd_op.{name}")
        if f"onednn_op.{name}" not in table:
            if plain is not None:
                rows.append(replace(plain, pir=f"onednn_op.{name}", **NO_EXPORT))
            elif (base := table.get(f"onednn_op.{name[:-1]}")) is not None and base.special is None:
                rows.append(_written_over(base, f"onednn_op.{name}"))
        if plain is None and (base := table.get(f"pd_op.{name[:-1]}")) is not None and base.special is None:
            rows.append(_written_over(base, f"pd_op.{name}"))
    return rows


ROWS = [
    row("onednn_op.quantize", "quantize", "input:Input", "output:Output",
        "is_negative_input:bool scale=Scale:f32=1 shift=Shift:f32 output_format:str=NHWC bfloat16:bool",
        hook=undeclared_results),
    row("onednn_op.dequantize", "dequantize", "input:Input", "output:Output", "scale=Scale:f32=1 shift=Shift:f32"),
    row("onednn_op.requantize", "requantize", "input:Input", "output:Output",
        "scale_in=Scale_in:f32=1 scale_out=Scale_out:f32=1 shift_in=Shift_in:f32=1 shift_out=Shift_out:f32=1",
        hook=undeclared_results),
    row("onednn_op.fused_conv3d", "fused_conv3d", "input:Input filter:Filter bias?:Bias residual_param?:ResidualData",
        "output:Output", CONV, hook=float32_only),
    *(row(f"{dialect}.conv2d_transpose_bias", "conv2d_transpose_bias",
          "x:Input filter:Filter bias:Bias output_size>output_size:ints", "out:Output", TRANSPOSE, hook=float32_only,
          **NO_EXPORT) for dialect in ("pd_op", "onednn_op")),
    row("pd_op.matmul_with_flatten", "mul", "x:X y:Y", "out:Out", MUL, **NO_EXPORT),
    row("onednn_op.matmul_with_flatten", "mul", "x:X y:Y", "out:Out", MUL_ONEDNN, hook=float32_only, **NO_EXPORT),
    *(row(f"{dialect}.matmul_with_flatten_grad", "mul_grad", "x:X y:Y out_grad:Out@GRAD",
          "x_grad:X@GRAD y_grad:Y@GRAD", MUL, **NO_EXPORT) for dialect in ("pd_op", "onednn_op")),
    *(row(f"{dialect}.legacy_matmul", "matmul", "x:X y:Y", "out:Out", f"{LEGACY_MATMUL} {extra}",
          hook=float32_only, **NO_EXPORT) for dialect, extra in (("pd_op", ""), ("onednn_op", ONEDNN_MATMUL))),
    *(row(f"{dialect}.legacy_matmul_grad", "matmul_grad", "x:X y:Y out_grad:Out@GRAD",
          "x_grad:X@GRAD y_grad:Y@GRAD", f"{LEGACY_MATMUL} {extra}", hook=float32_only, **NO_EXPORT)
      for dialect, extra in (("pd_op", ""), ("onednn_op", ONEDNN_MATMUL))),
]
