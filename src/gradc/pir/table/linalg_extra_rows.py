"""Rows: the PIR ops of the linalg_extra family. PIR's matrix_rank_tol is legacy matrix_rank with its TolTensor."""

from __future__ import annotations

from . import row


def _has_tol_tensor(op, exporter) -> bool:
    return bool(op.input("TolTensor"))


EIG_OUTPUTS = "out_w:Eigenvalues out_v:Eigenvectors"
RANK_ATTRS = "use_default_tol:bool hermitian:bool"

ROWS = [
    row("pd_op.eig", "eig", "x:X", EIG_OUTPUTS),
    row("pd_op.eig_grad", "eig_grad", "out_w:Eigenvalues out_v:Eigenvectors out_w_grad:Eigenvalues@GRAD "
        "out_v_grad:Eigenvectors@GRAD", "x_grad:X@GRAD"),
    row("pd_op.eigvals", "eigvals", "x:X"),
    row("pd_op.eigvalsh", "eigvalsh", "x:X", "eigenvalues:Eigenvalues eigenvectors:Eigenvectors",
        "uplo=UPLO:str=L is_test:bool"),
    row("pd_op.eigvalsh_grad", "eigvalsh_grad", "eigenvectors:Eigenvectors eigenvalues_grad:Eigenvalues@GRAD",
        "x_grad:X@GRAD", "uplo=UPLO:str=L is_test:bool"),
    row("pd_op.matrix_rank_tol", "matrix_rank", "x:X atol_tensor:TolTensor", "out:Out", RANK_ATTRS,
        when=_has_tol_tensor),
    row("pd_op.matrix_rank", "matrix_rank", "x:X ~TolTensor", "out:Out", f"tol:f32 {RANK_ATTRS}"),
    row("pd_op.matrix_rank_atol_rtol", "matrix_rank_atol_rtol", "x:x atol:atol rtol?:rtol", "out:out",
        "hermitian:bool"),
    row("pd_op.lu_solve", "lu_solve", "b:b lu:lu pivots:pivots", "out:out", "trans:str=N"),
    row("pd_op.lu_solve_grad", "lu_solve_grad", "b:b lu:lu pivots:pivots out:out out_grad:out@GRAD",
        "b_grad:b@GRAD lu_grad:lu@GRAD", "trans:str=N"),
    row("pd_op.svdvals", "svdvals", "x:x", "s:s"),
    row("pd_op.svdvals_grad", "svdvals_grad", "x:x s_grad:s@GRAD", "x_grad:x@GRAD"),
    row("pd_op.tril_indices", "tril_indices", "", "out:out", "rows:i32 cols:i32 offset:i32 dtype:dtype=int64 "
        "place=-:place"),
    row("pd_op.triu_indices", "triu_indices", "", "out:out", "row:i32 col:i32 offset:i32 dtype:dtype=int64 "
        "place=-:place"),
]
