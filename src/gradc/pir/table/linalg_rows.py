"""Rows: the linalg ops of the tensor API (gradc.ops.linalg and linalg_decomp) and their grads."""

from __future__ import annotations

from . import row
from .hooks import eigh_grad_uplo, lstsq_rank_int32, slogdet_shape

SOLVE = "x:X y:Y out:Out out_grad:Out@GRAD"
XY_GRADS = "x_grad:X@GRAD y_grad:Y@GRAD"
X_GRAD = "x_grad:X@GRAD"


ROWS = [
    # paddle.linalg.lstsq makes paddle.empty placeholders
    row("pd_op.empty", "empty", "shape>shape:ints@ShapeTensor,ShapeTensorList", "out:Out", "dtype:dtype place=-:place"),
    row("pd_op.inverse", "inverse", "x:Input", "out:Output"),
    row("pd_op.inverse_grad", "inverse_grad", "out:Output out_grad:Output@GRAD", "x_grad:Input@GRAD"),
    row("pd_op.det", "determinant", "x:Input"),
    row("pd_op.det_grad", "determinant_grad", "x:Input out:Out out_grad:Out@GRAD", "x_grad:Input@GRAD"),
    row("pd_op.slogdet", "slogdeterminant", "x:Input", hook=slogdet_shape),
    row("pd_op.slogdet_grad", "slogdeterminant_grad", "x:Input out:Out out_grad:Out@GRAD", "x_grad:Input@GRAD"),
    row("pd_op.cholesky", "cholesky", "x:X", "out:Out", "upper:bool"),
    row("pd_op.cholesky_grad", "cholesky_grad", "out:Out out_grad:Out@GRAD", X_GRAD, "upper:bool"),
    row("pd_op.cholesky_solve", "cholesky_solve", "x:X y:Y", "out:Out", "upper:bool"),
    row("pd_op.cholesky_solve_grad", "cholesky_solve_grad", SOLVE, XY_GRADS, "upper:bool"),
    row("pd_op.triangular_solve", "triangular_solve", "x:X y:Y", "out:Out",
        "upper:bool=true transpose:bool unitriangular:bool"),
    row("pd_op.triangular_solve_grad", "triangular_solve_grad", SOLVE, XY_GRADS,
        "upper:bool=true transpose:bool unitriangular:bool"),
    row("pd_op.solve", "solve", "x:X y:Y"),
    row("pd_op.solve_grad", "solve_grad", SOLVE, XY_GRADS),
    row("pd_op.matrix_power", "matrix_power", "x:X", "out:Out", "n:i32"),
    row("pd_op.matrix_power_grad", "matrix_power_grad", "x:X out:Out out_grad:Out@GRAD", X_GRAD, "n:i32"),
    row("pd_op.qr", "qr", "x:X", "q:Q r:R", "mode:str=reduced"),
    row("pd_op.qr_grad", "qr_grad", "x:X q:Q r:R q_grad?:Q@GRAD r_grad?:R@GRAD", X_GRAD, "mode:str=reduced"),
    row("pd_op.svd", "svd", "x:X", "u:U s:S vh:VH", "full_matrices:bool"),
    row("pd_op.svd_grad", "svd_grad", "x:X u:U vh:VH s:S u_grad?:U@GRAD vh_grad?:VH@GRAD s_grad?:S@GRAD", X_GRAD,
        "full_matrices:bool"),
    row("pd_op.eigh", "eigh", "x:X", "out_w:Eigenvalues out_v:Eigenvectors", "UPLO:str=L"),
    row("pd_op.eigh_grad", "eigh_grad",
        "out_w:Eigenvalues out_v:Eigenvectors out_w_grad?:Eigenvalues@GRAD out_v_grad?:Eigenvectors@GRAD", X_GRAD,
        hook=eigh_grad_uplo),
    row("pd_op.lu", "lu", "x:X", "out:Out pivots:Pivots infos:Infos", "pivot=pivots:bool=true"),
    row("pd_op.lu_grad", "lu_grad", "x:X out:Out pivots:Pivots out_grad:Out@GRAD", X_GRAD, "pivot=pivots:bool=true"),
    row("pd_op.lu_unpack", "lu_unpack", "x:X y:Pivots", "pmat:Pmat l:L u:U",
        "unpack_ludata:bool=true unpack_pivots:bool=true"),
    row("pd_op.lu_unpack_grad", "lu_unpack_grad", "x:X y:Pivots l:L u:U pmat:Pmat l_grad?:L@GRAD u_grad?:U@GRAD",
        X_GRAD, "unpack_ludata:bool=true unpack_pivots:bool=true"),
    row("pd_op.lstsq", "lstsq", "x:X y:Y rcond>rcond:float",
        "solution:Solution residuals:Residuals rank:Rank singular_values:SingularValues", "driver:str=gels",
        hook=lstsq_rank_int32),
]
