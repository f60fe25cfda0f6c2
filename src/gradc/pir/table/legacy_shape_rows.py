"""Export rows of the v1 shape ops (gradc.ops.legacy_shape) that one PIR op computes exactly: v1 transpose is
pd_op.transpose without XShape (v1 reshape is pd_op.legacy_reshape, translated_rows), v1 expand (a tiling) is
pd_op.tile, top_k is pd_op.topk along the last axis, largest first and sorted, and crop is pd_op.crop (with Y, whose
shape PIR's crop cannot take, export refuses the op for its unmapped slot). Export-only: PIR imports those ops as the
v2 ops (transpose2, tile, top_k_v2, crop_tensor), whose rows own them; so do the grads. flatten2's 2-D fold has no
row (nor has Paddle's translator an op for it), and export refuses it with the table's "no export" error."""

from __future__ import annotations

from . import row
from .grad_rows import X_GRAD

ROWS = [
    row("pd_op.transpose", "transpose", "x:X", "out:Out", "perm=axis:i32s"),
    row("pd_op.tile", "expand", "x:X repeat_times>expand_times:ints@ExpandTimes,expand_times_tensor"),
    row("pd_op.topk", "top_k", "x:X k>k:int@K", "out:Out indices:Indices",
        "axis=-:i32=-1 largest=-:bool=true sorted=-:bool=true"),
    row("pd_op.crop", "crop", "x:X shape>shape:ints offsets>offsets:ints@Offsets"),
    # their grads
    row("pd_op.transpose_grad", "transpose_grad", "out_grad:Out@GRAD ~X ~Out", X_GRAD, "perm=axis:i32s"),
    row("pd_op.tile_grad", "expand_grad",
        "x:X out_grad:Out@GRAD repeat_times>expand_times:ints@ExpandTimes,expand_times_tensor", X_GRAD),
    row("pd_op.topk_grad", "top_k_grad", "x:X indices:Indices out_grad:Out@GRAD k>k:int@K", X_GRAD,
        "axis=-:i32=-1 largest=-:bool=true sorted=-:bool=true"),
    row("pd_op.crop_grad", "crop_grad", "x:X out_grad:Out@GRAD offsets>offsets:ints@Offsets", X_GRAD),
]
