"""Rows: paddle.sparse's CSR forms and conversions as Paddle 3.3.1's PIR names them (its pd_op.*_sp op definitions,
which it registers though its builders of the conversions crash: docs/sparse.md). One legacy op (sparse_to_dense,
sparse_relu, ...) takes COO and CSR tensors, so export picks the row by x's layout; the COO rows are the fallback.
A product of two sparse tensors is matmul_coo_coo_sp or matmul_csr_csr_sp. The CSR forms of subtract, multiply,
divide, divide by a number, transpose, reshape, slice and sum (and their grad ops) have the COO rows' names and
arguments, as Paddle's definitions do."""

from __future__ import annotations

from ...ir import VarType
from ...ops.sparse_unary import ON_VALUES
from . import row
from .sparse_rows import ADD_GRAD, ADD_GRADS, UNARY_ATTRS, WINDOW


def _x_is(*layouts, slot: str = "x"):
    """``when``: the var of input ``slot`` is of one of ``layouts`` (a var PIR does not know counts as dense)."""
    def when(legacy, exporter) -> bool:
        var = exporter.var(legacy.input(slot)[0])
        return (var.type if var is not None else VarType.DENSE_TENSOR) in layouts
    return when


def _both_sparse(layout):
    def when(legacy, exporter) -> bool:
        return all((var := exporter.var(legacy.input(slot)[0])) is not None and var.type == layout
                   for slot in ("x", "y"))
    return when


CSR, COO, DENSE = VarType.SPARSE_CSR, VarType.SPARSE_COO, VarType.DENSE_TENSOR
ON_CSR = _x_is(CSR)

ROWS = [
    row("pd_op.dense_to_coo_sp", "sparse_to_sparse_coo", "x:x", "out:out", "sparse_dim:i64", when=_x_is(DENSE)),
    row("pd_op.csr_to_coo_sp", "sparse_to_sparse_coo", "x:x", "out:out", "sparse_dim:i64", when=ON_CSR),
    row("pd_op.dense_to_csr_sp", "sparse_to_sparse_csr", "x:x", "out:out", when=_x_is(DENSE)),
    row("pd_op.coo_to_csr_sp", "sparse_to_sparse_csr", "x:x", "out:out", when=_x_is(COO)),
    row("pd_op.csr_to_dense_sp", "sparse_to_dense", "x:x", "out:out", when=ON_CSR),
    row("pd_op.values_csr_sp", "sparse_values", "x:x", "out:out", when=ON_CSR),
    row("pd_op.relu_csr_sp", "sparse_relu", "x:x", "out:out", when=ON_CSR),
    row("pd_op.softmax_csr_sp", "sparse_softmax", "x:x", "out:out", "axis:i32=-1", when=ON_CSR),
    row("pd_op.cast_csr_sp", "sparse_cast", "x:x", "out:out", "index_dtype:dtype=-1 value_dtype:dtype=-1",
        when=ON_CSR),
    row("pd_op.isnan_csr_sp", "sparse_isnan", "x:x", "out:out", when=ON_CSR),
    *(row(f"pd_op.{op.removeprefix('sparse_')}_csr_sp", op, "x:x", "out:out", UNARY_ATTRS.get(op, ""), when=ON_CSR)
      for op in ON_VALUES),
    row("pd_op.add_csr_csr_sp", "sparse_add", "x:x y:y", "out:out", when=ON_CSR),
    row("pd_op.add_csr_csr_grad_sp", "sparse_add_grad", "x:x y:y out_grad:out@GRAD", "x_grad:x@GRAD y_grad:y@GRAD",
        when=ON_CSR),
    row("pd_op.matmul_coo_coo_sp", "sparse_matmul", "x:x y:y", "out:out", when=_both_sparse(COO)),
    row("pd_op.matmul_csr_csr_sp", "sparse_matmul", "x:x y:y", "out:out", when=_both_sparse(CSR)),
    # the grad ops gradc's backward writes for a CSR tensor (the others take either layout in Paddle too)
    row("pd_op.relu_csr_grad_sp", "sparse_relu_grad", "out:out out_grad:out@GRAD", "x_grad:x@GRAD",
        when=_x_is(CSR, slot="out")),
    row("pd_op.softmax_csr_grad_sp", "sparse_softmax_grad", "out:out out_grad:out@GRAD", "x_grad:x@GRAD",
        "axis:i32=-1", when=_x_is(CSR, slot="out")),
    # subtract's gradient is sparse_add's (of y scaled by -1), divide by a number's a scale: no grad op of their own
    row("pd_op.subtract_csr_csr_sp", "sparse_subtract", "x:x y:y", "out:out", when=ON_CSR),
    row("pd_op.multiply_csr_csr_sp", "sparse_multiply", "x:x y:y", "out:out", when=ON_CSR),
    row("pd_op.divide_csr_csr_sp", "sparse_divide", "x:x y:y", "out:out", when=ON_CSR),
    row("pd_op.divide_scalar_csr_sp", "sparse_divide_scalar", "x:x", "out:out", "scalar:f32", when=ON_CSR),
    row("pd_op.transpose_csr_sp", "sparse_transpose", "x:x", "out:out", "perm:i32s", when=ON_CSR),
    row("pd_op.reshape_csr_sp", "sparse_reshape", "x:x shape>shape:ints@ShapeTensor,ShapeTensorList", "out:out",
        when=ON_CSR),
    row("pd_op.slice_csr_sp", "sparse_slice", f"x:x {WINDOW}", "out:out", "axes:intarray", when=ON_CSR),
    row("pd_op.sum_csr_sp", "sparse_sum", "x:x axis>axis:ints@AxisTensor,AxisTensorList", "out:out",
        "dtype:dtype=-1 keepdim:bool", when=ON_CSR),
    row("pd_op.multiply_csr_csr_grad_sp", "sparse_multiply_grad", ADD_GRAD, ADD_GRADS, when=ON_CSR),
    row("pd_op.divide_csr_csr_grad_sp", "sparse_divide_grad", "x:x y:y out:out out_grad:out@GRAD", ADD_GRADS,
        when=ON_CSR),
    row("pd_op.transpose_csr_grad_sp", "sparse_transpose_grad", "out_grad:out@GRAD", "x_grad:x@GRAD", "perm:i32s",
        when=_x_is(CSR, slot="out@GRAD")),
    row("pd_op.reshape_csr_grad_sp", "sparse_reshape_grad", "x:x out_grad:out@GRAD ~ShapeTensor ~ShapeTensorList",
        "x_grad:x@GRAD", when=ON_CSR),
    row("pd_op.slice_csr_grad_sp", "sparse_slice_grad", f"x:x out_grad:out@GRAD {WINDOW}", "x_grad:x@GRAD",
        "axes:intarray", when=ON_CSR),
    row("pd_op.sum_csr_grad_sp", "sparse_sum_grad", "x:x out_grad:out@GRAD axis>axis:ints@AxisTensor,AxisTensorList",
        "x_grad:x@GRAD", "keepdim:bool", when=ON_CSR),
]
