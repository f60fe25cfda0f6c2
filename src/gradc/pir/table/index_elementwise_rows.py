"""Rows: Tensor indexing's strided-view ops (gradc.ops.index_elementwise), as paddle._pir_ops builds them. Each
out-of-place put comes before its in-place twin, which export leaves alone."""

from __future__ import annotations

from . import row

VIEW = "input_dims:i64s input_strides:i64s index_dims:i64s"
GET = f"{VIEW} index_stride:i64s slice_offset:i64 accumulate:bool is_combined:bool"
PUT = f"{VIEW} index_strides:i64s slice_offset:i64"

ROWS = [
    row("pd_op.index_elementwise_get", "index_elementwise_get", "x:x index:index*", "out:Out", GET),
    row("pd_op.index_elementwise_get_grad", "index_elementwise_get_grad", "x:x index:index* out_grad:Out@GRAD",
        "x_grad:x@GRAD", GET),
    row("pd_op.index_elementwise_put", "index_elementwise_put", "x:x index:index*", "out:out", f"value:f32 {PUT}"),
    row("pd_op.index_elementwise_put_", "index_elementwise_put", "x:x index:index*", "out:out&x", f"value:f32 {PUT}"),
    row("pd_op.index_elementwise_put_grad", "index_elementwise_put_grad", "x:x index:index* out_grad:out@GRAD",
        "x_grad:x@GRAD", PUT),
    row("pd_op.index_elementwise_put_with_tensor", "index_elementwise_put_with_tensor", "x:x index:index* value:value",
        "out:Out", PUT),
    row("pd_op.index_elementwise_put_with_tensor_", "index_elementwise_put_with_tensor",
        "x:x index:index* value:value", "out:Out&x", PUT),
    row("pd_op.index_elementwise_put_with_tensor_grad", "index_elementwise_put_with_tensor_grad",
        "x:x index:index* value:value out_grad:Out@GRAD", "x_grad:x@GRAD value_grad:value@GRAD", PUT),
]
