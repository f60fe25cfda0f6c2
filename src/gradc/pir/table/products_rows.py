"""Rows: the products ops of the tensor API (gradc.ops.products, gradc.ops.products_einsum) and their grads."""

from __future__ import annotations

from . import row

XY = "x:X y:Y"
XY_GRADS = "x_grad:X@GRAD y_grad:Y@GRAD"
SCALED = "beta=Beta:f32 alpha=Alpha:f32"
SCALED_GRADS = "input_grad:Input@GRAD x_grad:X@GRAD y_grad:Y@GRAD"
DIAGONAL = "offset:i32 axis1:i32 axis2:i32"
FROBENIUS = "keep_dim:bool reduce_all:bool"

ROWS = [
    row("pd_op.dot", "dot", XY),
    row("pd_op.dot_grad", "dot_grad", "x:X y:Y out_grad:Out@GRAD", XY_GRADS),
    row("pd_op.cross", "cross", XY, "out:Out", "axis=dim:i32"),
    row("pd_op.cross_grad", "cross_grad", "x:X y:Y out_grad:Out@GRAD", XY_GRADS, "axis=dim:i32"),
    row("pd_op.kron", "kron", XY),
    row("pd_op.kron_grad", "kron_grad", "x:X y:Y out_grad:Out@GRAD", XY_GRADS),
    row("pd_op.mv", "mv", "x:X vec:Vec"),
    row("pd_op.mv_grad", "mv_grad", "x:X vec:Vec out_grad:Out@GRAD", "x_grad:X@GRAD vec_grad:Vec@GRAD"),
    row("pd_op.addmm", "addmm", "input:Input x:X y:Y", "out:Out", SCALED),
    row("pd_op.addmm_grad", "addmm_grad", "input:Input x:X y:Y out_grad:Out@GRAD", SCALED_GRADS, SCALED),
    row("pd_op.baddbmm", "baddbmm", "input:Input x:X y:Y", "out:Out", SCALED),
    row("pd_op.baddbmm_grad", "baddbmm_grad", "input:Input x:X y:Y out_grad:Out@GRAD", SCALED_GRADS, SCALED),
    row("pd_op.multi_dot", "multi_dot", "x:X*"),
    row("pd_op.multi_dot_grad", "multi_dot_grad", "x:X* out_grad:Out@GRAD", "x_grad:X@GRAD*"),
    row("pd_op.dist", "dist", XY, "out:Out", "p:f32"),
    row("pd_op.dist_grad", "dist_grad", "x:X y:Y out:Out out_grad:Out@GRAD", XY_GRADS, "p:f32"),
    row("pd_op.trace", "trace", "x:Input", "out:Out", DIAGONAL),
    row("pd_op.trace_grad", "trace_grad", "x:Input out_grad:Out@GRAD", "x_grad:Input@GRAD", DIAGONAL),
    row("pd_op.diagonal", "diagonal", "x:Input", "out:Out", DIAGONAL),
    row("pd_op.diagonal_grad", "diagonal_grad", "x:Input out_grad:Out@GRAD", "x_grad:Input@GRAD", DIAGONAL),
    row("pd_op.diag_embed", "diag_embed", "input:Input", "out:Out", "offset:i32 dim1:i32 dim2:i32"),
    row("pd_op.frobenius_norm", "frobenius_norm", "x:X axis>dim:ints", "out:Out", FROBENIUS),
    row("pd_op.frobenius_norm_grad", "frobenius_norm_grad", "x:X out:Out out_grad:Out@GRAD axis>dim:ints",
        "x_grad:X@GRAD", FROBENIUS),
    row("pd_op.einsum", "einsum", "x:Operands*", "out:Out inner_cache:InnerCache* xshape:XShape*", "equation:str"),
    row("pd_op.einsum_grad", "einsum_grad", "x_shape:x_shape* inner_cache?:InnerCache* out_grad:Out@GRAD",
        "x_grad:Operands@GRAD*", "equation:str"),
]
