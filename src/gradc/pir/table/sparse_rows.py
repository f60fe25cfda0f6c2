"""Rows: paddle.sparse's ops (gradc.ops.sparse, sparse_unary), as Paddle 3.3.1's PIR writes them (pd_op.*_sp,
the inference program paddle.jit.save writes for paddle.sparse.nn's layers). PIR names sparse_add by its operands'
kinds: export writes add_coo_dense_sp for a dense y (a bias), add_coo_coo_sp for a sparse one. The grad ops are
Paddle's `*_grad_sp` (sparse_backward.yaml's argument names), which Paddle's own PIR backward never writes."""

from __future__ import annotations

from ...ir import VarType
from ...ops.sparse_unary import ON_VALUES
from . import row

CONV = "paddings:i32s dilations:i32s strides:i32s groups:i32 subm:bool key:str"
BATCH_NORM_GRAD = ("momentum:f32 epsilon:f32 data_format=data_layout:str is_test:bool use_global_stats:bool "
                   "trainable_statistics:bool")
BATCH_NORM = ("is_test:bool momentum:f32 epsilon:f32 data_format=data_layout:str use_global_stats:bool "
              "trainable_statistics:bool")


def _dense_y(legacy, exporter) -> bool:
    var = exporter.var(legacy.input("y")[0])
    return var is None or var.type not in (VarType.SPARSE_COO, VarType.SPARSE_CSR)


# PIR's slice takes axes as an attribute only (a Tensor of axes crashes Paddle's builder), starts and ends as operands
WINDOW = "starts>starts:ints@StartsTensor,StartsTensorList ends>ends:ints@EndsTensor,EndsTensorList"
def _csr_x(legacy, exporter) -> bool:
    var = exporter.var(legacy.input("x")[0])
    return var is not None and var.type == VarType.SPARSE_CSR


def _coo_pair(legacy, exporter) -> bool:
    """x and y sparse, x COO (a CSR pair is sparse_csr_rows' add_csr_csr_sp)."""
    return not _dense_y(legacy, exporter) and not _csr_x(legacy, exporter)


def _by_layout(pir: str, legacy: str, operands: str, attrs: str = "") -> list:
    """The rows of a legacy op PIR names by x's layout (matmul_coo_dense_sp, matmul_csr_dense_sp), y dense (a sparse
    y is sparse_csr_rows' matmul_coo_coo_sp or matmul_csr_csr_sp)."""
    def dense(legacy, exporter) -> bool:
        return "y" not in legacy.inputs or _dense_y(legacy, exporter)
    return [row(f"pd_op.{pir.format('coo')}", legacy, operands, "out:out", attrs,
                when=lambda legacy, exporter: not _csr_x(legacy, exporter) and dense(legacy, exporter)),
            row(f"pd_op.{pir.format('csr')}", legacy, operands, "out:out", attrs,
                when=lambda legacy, exporter: _csr_x(legacy, exporter) and dense(legacy, exporter))]


ADD_GRAD, ADD_GRADS = "x:x y:y out_grad:out@GRAD", "x_grad:x@GRAD y_grad:y@GRAD"
# attributes of the elementwise ops on values (the rest have none)
UNARY_ATTRS = {"sparse_leaky_relu": "alpha:f32", "sparse_pow": "factor:f32",
               "sparse_scale": "scale:f32 bias:f32 bias_after_scale:bool"}

ROWS = [
    *(row(f"pd_op.{op.removeprefix('sparse_')}_coo_sp", op, "x:x", "out:out", UNARY_ATTRS.get(op, ""))
      for op in ON_VALUES),   # acos and acosh too: PIR registers them, though paddle.sparse has neither
    row("pd_op.sparse_coo_tensor_sp", "sparse_sparse_coo_tensor", "values:values indices:indices", "out:out",
        "shape:i64s"),
    row("pd_op.conv3d_sp", "sparse_conv3d", "x:x kernel:kernel", "out:out rulebook:rulebook counter:counter", CONV),
    row("pd_op.add_coo_dense_sp", "sparse_add", "x:x y:y", "out:out", when=_dense_y),
    row("pd_op.add_coo_coo_sp", "sparse_add", "x:x y:y", "out:out", when=_coo_pair),
    row("pd_op.batch_norm_sp_", "sparse_batch_norm", "x:x mean:mean variance:variance scale:scale bias:bias",
        "out:out mean_out:mean_out&mean variance_out:variance_out&variance saved_mean:saved_mean "
        "saved_variance:saved_variance reserve_space:reserve_space", BATCH_NORM),
    row("pd_op.relu_coo_sp", "sparse_relu", "x:x", "out:out"),
    row("pd_op.coo_to_dense_sp", "sparse_to_dense", "x:x", "out:out"),
    row("pd_op.values_coo_sp", "sparse_values", "x:x", "out:out"),
    row("pd_op.reshape_coo_sp", "sparse_reshape", "x:x shape>shape:ints@ShapeTensor,ShapeTensorList", "out:out"),
    row("pd_op.slice_coo_sp", "sparse_slice", f"x:x {WINDOW}", "out:out", "axes:intarray"),
    row("pd_op.sum_coo_sp", "sparse_sum", "x:x axis>axis:ints@AxisTensor,AxisTensorList", "out:out",
        "dtype:dtype=-1 keepdim:bool"),
    row("pd_op.softmax_coo_sp", "sparse_softmax", "x:x", "out:out", "axis:i32=-1"),
    row("pd_op.cast_coo_sp", "sparse_cast", "x:x", "out:out", "index_dtype:dtype=-1 value_dtype:dtype=-1"),
    row("pd_op.isnan_coo_sp", "sparse_isnan", "x:x", "out:out"),
    row("pd_op.indices_sp", "sparse_indices", "x:x", "out:out"),
    # the ops PIR mode alone builds (gradc.ops.sparse_binary)
    row("pd_op.subtract_coo_coo_sp", "sparse_subtract", "x:x y:y", "out:out"),
    row("pd_op.multiply_coo_coo_sp", "sparse_multiply", "x:x y:y", "out:out"),
    row("pd_op.divide_coo_coo_sp", "sparse_divide", "x:x y:y", "out:out"),
    row("pd_op.divide_scalar_coo_sp", "sparse_divide_scalar", "x:x", "out:out", "scalar:f32"),
    row("pd_op.transpose_coo_sp", "sparse_transpose", "x:x", "out:out", "perm:i32s"),
    row("pd_op.coalesce_sp", "sparse_coalesce", "x:x", "out:out"),
    # products of a sparse x (gradc.ops.sparse_matmul): Paddle builds mv and addmm, has no CPU kernel of either
    *_by_layout("matmul_{}_dense_sp", "sparse_matmul", "x:x y:y"),
    *_by_layout("mv_{}_sp", "sparse_mv", "x:x vec:vec"),
    *_by_layout("addmm_{}_dense_sp", "sparse_addmm", "input:input x:x y:y", "beta:f32 alpha:f32"),
    row("pd_op.masked_matmul_sp", "sparse_masked_matmul", "x:x y:y mask:mask", "out:out"),
    # nn.MaxPool3D (gradc.ops.sparse_pool), which neither static mode of Paddle builds
    row("pd_op.maxpool_sp", "sparse_maxpool", "x:x", "out:out rulebook:rulebook counter:counter",
        "kernel_sizes:i32s paddings:i32s dilations:i32s strides:i32s"),
    row("pd_op.maxpool_grad_sp", "sparse_maxpool_grad", "x:x rulebook:rulebook counter:counter out:out "
        "out_grad:out@GRAD", "x_grad:x@GRAD", "kernel_sizes:i32s"),
    row("pd_op.multiply_coo_coo_grad_sp", "sparse_multiply_grad", ADD_GRAD, ADD_GRADS),
    row("pd_op.divide_coo_coo_grad_sp", "sparse_divide_grad", "x:x y:y out:out out_grad:out@GRAD", ADD_GRADS),
    row("pd_op.transpose_coo_grad_sp", "sparse_transpose_grad", "out_grad:out@GRAD", "x_grad:x@GRAD", "perm:i32s"),
    # the backward (gradc.ops.sparse, sparse_shape; the elementwise ops' gradients are made of these)
    row("pd_op.sparse_coo_tensor_grad_sp", "sparse_sparse_coo_tensor_grad", "indices:indices out_grad:out@GRAD",
        "values_grad:values@GRAD"),
    row("pd_op.conv3d_grad_sp", "sparse_conv3d_grad", "x:x kernel:kernel out:out rulebook:rulebook counter:counter "
        "out_grad:out@GRAD", "x_grad:x@GRAD kernel_grad:kernel@GRAD", CONV),
    row("pd_op.add_coo_dense_grad_sp", "sparse_add_grad", ADD_GRAD, ADD_GRADS, when=_dense_y),
    row("pd_op.add_coo_coo_grad_sp", "sparse_add_grad", ADD_GRAD, ADD_GRADS, when=_coo_pair),
    row("pd_op.batch_norm_grad_sp", "sparse_batch_norm_grad", "x:x scale:scale bias:bias mean_out?:mean_out "
        "variance_out?:variance_out saved_mean:saved_mean saved_variance:saved_variance reserve_space?:reserve_space "
        "out_grad:out@GRAD", "x_grad:x@GRAD scale_grad:scale@GRAD bias_grad:bias@GRAD", BATCH_NORM_GRAD),
    row("pd_op.relu_coo_grad_sp", "sparse_relu_grad", "out:out out_grad:out@GRAD", "x_grad:x@GRAD"),
    row("pd_op.to_dense_grad_sp", "sparse_to_dense_grad", "x:x out_grad:out@GRAD", "x_grad:x@GRAD"),
    row("pd_op.values_grad_sp", "sparse_values_grad", "x:x out_grad:out@GRAD", "x_grad:x@GRAD"),
    row("pd_op.reshape_coo_grad_sp", "sparse_reshape_grad", "x:x out_grad:out@GRAD ~ShapeTensor ~ShapeTensorList",
        "x_grad:x@GRAD"),
    row("pd_op.slice_coo_grad_sp", "sparse_slice_grad", f"x:x out_grad:out@GRAD {WINDOW}", "x_grad:x@GRAD",
        "axes:intarray"),
    row("pd_op.sum_coo_grad_sp", "sparse_sum_grad", "x:x out_grad:out@GRAD axis>axis:ints@AxisTensor,AxisTensorList",
        "x_grad:x@GRAD", "keepdim:bool"),
    row("pd_op.softmax_coo_grad_sp", "sparse_softmax_grad", "out:out out_grad:out@GRAD", "x_grad:x@GRAD",
        "axis:i32=-1"),
]
