"""Rows: the sampling ops of the tensor API (gradc.ops.sampling), forward and grad. affine_grid's output_shape
operand is a constant (the legacy attribute) or a tensor computed in the program (legacy input OutputShape)."""

from __future__ import annotations

from . import row

OUTPUT_SHAPE = "output_shape>output_shape:ints@OutputShape"
SAMPLER = "mode:str=bilinear padding_mode:str=zeros align_corners:bool=true"
SHIFT = "seg_num:i32 shift_ratio:f32=0.25 data_format:str=NCHW"

ROWS = [
    row("pd_op.affine_grid", "affine_grid", f"input:Theta {OUTPUT_SHAPE}", "output:Output", "align_corners:bool=true"),
    row("pd_op.affine_grid_grad", "affine_grid_grad", f"input:Theta output_grad:Output@GRAD {OUTPUT_SHAPE}",
        "input_grad:Theta@GRAD", "align_corners:bool=true"),
    row("pd_op.grid_sample", "grid_sampler", "x:X grid:Grid", "out:Output", SAMPLER),
    row("pd_op.grid_sample_grad", "grid_sampler_grad", "x:X grid:Grid out_grad:Output@GRAD",
        "x_grad:X@GRAD grid_grad:Grid@GRAD", SAMPLER),
    row("pd_op.temporal_shift", "temporal_shift", "x:X", "out:Out", SHIFT),
    row("pd_op.temporal_shift_grad", "temporal_shift_grad", "out_grad:Out@GRAD", "x_grad:X@GRAD", SHIFT),
]
