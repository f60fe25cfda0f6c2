"""Rows: paddle.linalg's public callables on inputs declared with dims of size -1 (InputSpec([None, ...])): batch and
matrix sizes known at run time only, in programs Paddle saves that way. Square matrices are kept
invertible or positive definite without a static size (x x^T of a wide x; an identity made by diag_embed of ones
like x's first column); eigenvector and singular vector outputs enter the loss phase-free (U VH, |V|, Q R)."""

import paddle

from .linalg_extra import _lu_solve, _svdvals, _symmetric
from .spec import dyn, table


def _gram(x):
    """x x^T: positive definite for a wide x of full rank."""
    return paddle.matmul(x, x, transpose_y=True)


def _shifted(x):
    """x + 3 I, the identity built from x's run-time size."""
    return x + 3 * paddle.diag_embed(paddle.ones_like(x[..., 0]))


def _polar(x, full, k=0):
    """U VH (the orthogonal polar factor) and S: free of the signs the SVD picks; of a full SVD, U's first k columns
    and VH's first k rows (k = min(M, N), known to the row)."""
    u, s, vh = paddle.linalg.svd(x, full_matrices=full)
    return paddle.matmul(u[..., :k] if full else u, vh[..., :k, :] if full else vh), s


ROWS = table(
    "linalg_dynamic",
    ("dyn_inv", lambda x: paddle.linalg.inv(_shifted(x)), dyn(2, 3, 3)),
    ("dyn_det", lambda x: paddle.linalg.det(x), dyn(2, 3, 3)),
    ("dyn_slogdet", lambda x: paddle.reshape(paddle.linalg.slogdet(x)[1], [-1]), dyn(2, 3, 3)),   # declared 2-D
    ("dyn_cholesky", lambda x: paddle.linalg.cholesky(_gram(x)), dyn(2, 3, 5)),
    ("dyn_cholesky_inverse", lambda x: paddle.linalg.cholesky_inverse(paddle.linalg.cholesky(_gram(x))),
     dyn(3, 5)),
    ("dyn_solve", lambda a, b: paddle.linalg.solve(_shifted(a), b), dyn(2, 3, 3), dyn(2, 3, 2)),
    ("dyn_solve_broadcast", lambda a, b: paddle.linalg.solve(_shifted(a), b), dyn(1, 3, 3), dyn(2, 3, 2)),
    ("dyn_triangular_solve", lambda a, b: paddle.linalg.triangular_solve(paddle.linalg.cholesky(_gram(a)), b,
                                                                          upper=False), dyn(2, 3, 5), dyn(2, 3, 2)),
    ("dyn_cholesky_solve", lambda a, b: paddle.linalg.cholesky_solve(b, paddle.linalg.cholesky(_gram(a))),
     dyn(2, 3, 5), dyn(2, 3, 2)),
    ("dyn_matrix_power", lambda x: paddle.linalg.matrix_power(x, 3), dyn(2, 3, 3)),
    ("dyn_matrix_power_neg", lambda x: paddle.linalg.matrix_power(_shifted(x), -2), dyn(2, 3, 3)),
    ("dyn_qr", lambda x: paddle.linalg.qr(x), dyn(2, 5, 4, dims=(0, 1))),
    ("dyn_qr_wide", lambda x: paddle.linalg.qr(x), dyn(2, 3, 5)),
    ("dyn_qr_complete", lambda x: paddle.linalg.qr(x, "complete"), dyn(2, 3, 4)),
    ("dyn_qr_r", lambda x: paddle.linalg.qr(x, "r"), dyn(2, 5, 4)),
    ("dyn_svd", lambda x: _polar(x, False), dyn(2, 5, 4, dims=(0, 1))),
    ("dyn_svd_full", lambda x: _polar(x, True, 4), dyn(2, 5, 4, dims=(0, 1))),
    ("dyn_svd_full_wide", lambda x: _polar(x, True, 3), dyn(2, 3, 4)),
    ("dyn_svdvals", lambda x: _svdvals(x), dyn(2, 3, 5)),
    ("dyn_eigh", lambda x: paddle.linalg.eigh(_symmetric(x))[0], dyn(2, 3, 3)),
    ("dyn_eigvalsh", lambda x: paddle.linalg.eigvalsh(_symmetric(x)), dyn(2, 3, 3)),
    ("dyn_eig_values", lambda x: paddle.as_real(paddle.linalg.eig(x)[0]), dyn(2, 3, 3)),
    ("dyn_eigvals", lambda x, a: x * paddle.abs(paddle.linalg.eigvals(a)).sum(), dyn(3), dyn(2, 3, 3)),
    ("dyn_lu", lambda x: paddle.linalg.lu(x)[0], dyn(2, 5, 4)),
    ("dyn_lu_unpack", lambda x: paddle.matmul(*paddle.linalg.lu_unpack(*paddle.linalg.lu(x))[1:]), dyn(2, 3, 5)),
    ("dyn_lu_solve", lambda b, a: _lu_solve(b, a), dyn(3, 2), dyn(3, 3, dims=(0,))),
    ("dyn_pinv", lambda x: paddle.linalg.pinv(x), dyn(2, 4, 3)),
    ("dyn_lstsq", lambda a, b: paddle.linalg.lstsq(a, b)[0], dyn(4, 3), dyn(4, 2)),
    ("dyn_matrix_rank", lambda x, a: x * paddle.cast(paddle.cast(paddle.linalg.matrix_rank(a), "int64"), x.dtype),
     dyn(2), dyn(2, 3, 4)),
    ("dyn_norm_fro", lambda x: paddle.linalg.norm(x, "fro", axis=[0, -1]), dyn(3, 4, 2)),
    ("dyn_norm_nuc", lambda x: paddle.linalg.norm(x, "nuc", axis=[-2, -1]), dyn(2, 3, 4)),
    ("dyn_matrix_norm_2", lambda x: paddle.linalg.matrix_norm(x, 2), dyn(2, 4, 3)),
    ("dyn_vector_norm", lambda x: paddle.linalg.vector_norm(x, 3, axis=[0, -1]), dyn(3, 4, 2)),
    ("dyn_logsumexp_ends", lambda x: paddle.logsumexp(x, axis=[0, -1]), dyn(3, 4, 2)),
    ("dyn_cond", lambda x: paddle.linalg.cond(x), dyn(2, 3, 3)),
    ("dyn_cov", lambda x: paddle.linalg.cov(x), dyn(3, 5, dims=(0,))),   # all dims -1: Paddle's own loss is NaN
    ("dyn_corrcoef", lambda x: paddle.linalg.corrcoef(x), dyn(3, 5, dims=(0,))),
    ("dyn_multi_dot", lambda a, b, c: paddle.linalg.multi_dot([a, b, c]), dyn(2, 3), dyn(3, 4), dyn(4, 2)),
    ("dyn_matrix_exp", lambda x: paddle.linalg.matrix_exp(x * 0.5), dyn(2, 3, 3)),
    ("dyn_householder_product", lambda x, tau: paddle.linalg.householder_product(x, tau), dyn(4, 3), dyn(3)),
    ("dyn_ormqr", lambda x, tau, y: paddle.linalg.ormqr(x, tau, y), dyn(3, 3), dyn(3), dyn(3, 2)),
    ("dyn_cross", lambda x, y: paddle.linalg.cross(x, y, axis=1), dyn(2, 3, dims=(0,)), dyn(2, 3, dims=(0,))),
    ("dyn_vecdot", lambda x, y: paddle.linalg.vecdot(x, y), dyn(3, 4), dyn(3, 4)),
    ("dyn_matrix_transpose", lambda x: paddle.linalg.matrix_transpose(x), dyn(2, 3, 4)),
    ("dyn_matmul", lambda x, y: paddle.linalg.matmul(x, y), dyn(2, 3, 4), dyn(4, 2)),
    ("dyn_diagonal", lambda x: paddle.linalg.diagonal(x, offset=1, axis1=-2, axis2=-1), dyn(2, 3, 4)),
)
