"""Rows: the PIR ops of Tensor methods gradc lacked (docs/pir-sweep.md): refills and in-place draws
(gradc.ops.tensor_fill), views (gradc.ops.tensor_views), paddle.divide's trunc mode (trunc_divide) and paddle.range
(range_v2). Each out-of-place op comes before its in-place twin, which export leaves alone."""

from __future__ import annotations

from ...ops.tensor_views import DTYPE_BYTES
from . import row
from .hooks import arange_dtype, arange_dtype_back

DIAGONAL = "value:f32 offset:i32 wrap:bool"
UNIFORM = "min:f32 max:f32 seed:i32 diag_num:i32 diag_step:i32 diag_val:f32"
GAUSSIAN = "mean:f32 std:f32 seed:i32"
STRIDED = "dims:i64s stride:i64s offset:i64"



def strided_type(legacy, op, ctx) -> None:
    """PIR types as_strided's result with its input's shape: the result is ``dims``."""
    out = ctx.block.find_var(legacy.output("out")[0])
    if out is not None:
        out.shape = list(legacy.attrs["dims"])


def viewed_dtype(legacy, op, ctx) -> None:
    """PIR types view_dtype's result like its input: it holds ``dtype``, its last dim rescaled by the byte sizes."""
    source, out = ctx.block.find_var(legacy.input("input")[0]), ctx.block.find_var(legacy.output("out")[0])
    if source is None or out is None:
        return
    out.dtype = legacy.attrs["dtype"]
    if source.shape and source.shape[-1] >= 0 and source.dtype in DTYPE_BYTES and out.dtype in DTYPE_BYTES:
        out.shape = [*source.shape[:-1], source.shape[-1] * DTYPE_BYTES[source.dtype] // DTYPE_BYTES[out.dtype]]


ROWS = [
    row("pd_op.fill", "fill_any", "x:X value>value:float", "out:Out"),
    row("pd_op.fill_", "fill_any", "x:X value>value:float", "out:Out&x"),
    row("pd_op.fill_grad", "fill_any_grad", "out_grad:Out@GRAD value>value:float", "x_grad:X@GRAD"),
    row("pd_op.fill_diagonal", "fill_diagonal", "x:X", "out:Out", DIAGONAL),
    row("pd_op.fill_diagonal_", "fill_diagonal", "x:X", "out:Out&x", DIAGONAL),
    row("pd_op.fill_diagonal_grad", "fill_diagonal_grad", "out_grad:Out@GRAD", "x_grad:X@GRAD", DIAGONAL),
    row("pd_op.gaussian_inplace", "gaussian_inplace", "x:x", "out:out", GAUSSIAN),
    row("pd_op.gaussian_inplace_", "gaussian_inplace", "x:x", "out:out&x", GAUSSIAN),
    row("pd_op.gaussian_inplace_grad", "gaussian_inplace_grad", "out_grad:out@GRAD", "x_grad:x@GRAD", GAUSSIAN),
    row("pd_op.uniform_inplace", "uniform_random_inplace", "x:X", "out:Out", UNIFORM),
    row("pd_op.uniform_inplace_", "uniform_random_inplace", "x:X", "out:Out&x", UNIFORM),
    row("pd_op.uniform_inplace_grad", "uniform_random_inplace_grad", "out_grad:Out@GRAD", "x_grad:X@GRAD", UNIFORM),
    row("pd_op.uniform_random_batch_size_like", "uniform_random_batch_size_like", "input:Input", "out:Out",
        f"shape:i32s input_dim_idx:i32 output_dim_idx:i32 {UNIFORM} dtype:dtype"),
    row("pd_op.view_shape", "view_shape", "input:input", "out:out", "dims:i64s"),
    row("pd_op.view_shape_grad", "view_shape_grad", "input:input out_grad:out@GRAD", "input_grad:input@GRAD",
        "dims:i64s"),
    row("pd_op.view_dtype", "view_dtype", "input:input", "out:out", "dtype:dtype", hook=viewed_dtype),
    row("pd_op.as_strided", "as_strided", "input:input", "out:out", STRIDED, hook=strided_type),
    row("pd_op.as_strided_grad", "as_strided_grad", "input:input out_grad:out@GRAD", "input_grad:input@GRAD", STRIDED),
    row("pd_op.index_select_strided", "index_select_strided", "x:x", "out:out", "index:i64 axis:i32"),
    row("pd_op.index_select_strided_grad", "index_select_strided_grad", "x:x out_grad:out@GRAD", "x_grad:x@GRAD",
        "index:i64 axis:i32"),
    row("pd_op.set", "set", "x:x source:source", "out:out", STRIDED),
    row("pd_op.set_", "set", "x:x source:source", "out:out&x", STRIDED),
    row("pd_op.trunc_divide", "trunc_divide", "x:x y:y", "out:out"),
    row("pd_op.trunc_divide_", "trunc_divide", "x:x y:y", "out:out&x"),
    row("pd_op.range_v2", "range_v2", "start:Start end:End step:Step", "out:Out", "dtype=-:dtype place=-:place",
        hook=arange_dtype, back=arange_dtype_back),
]
