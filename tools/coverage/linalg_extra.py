"""Rows: eigen decompositions, matrix rank, lu_solve, svdvals, tril/triu indices.

paddle.linalg.lu_solve and svdvals are PIR-only in Paddle 3.3.1 ("must be Value, but got Variable"): in legacy mode
the rows append the op they write in PIR mode (legacy_shim.append). Rows of eig end in real values (as_real, abs:
the eigenvectors' moduli do not depend on the phase LAPACK picks); the integer results (ranks, indices) scale x."""

import numpy as np
import paddle

from .legacy_shim import append
from .spec import const, f, given, table


def _rotated(*diagonals: tuple[float, ...], symmetric: bool = False) -> np.ndarray:
    """Matrices Q diag(d) R with fixed orthogonal Q, R (R = Q^T when ``symmetric``): these singular values (these
    eigenvalues), without the zeros showing in the entries."""
    q, _ = np.linalg.qr(np.arange(1.0, 10.0).reshape(3, 3) ** 1.5)
    r = q.T if symmetric else np.linalg.qr(np.arange(9.0, 0.0, -1.0).reshape(3, 3) ** 0.5 + np.eye(3))[0]
    return np.stack([q @ np.diag(d) @ r for d in diagonals]).astype("float32")


DEFICIENT = _rotated((3.0, 2.0, 0.0), (1.0, 0.05, 0.0))     # ranks 2 and 2; 1 above a tolerance of 0.5
SYMMETRIC = _rotated((3.0, -2.0, 0.0), (-1.0, 0.2, 0.0), symmetric=True)


def _ranked(x, rank):
    """x scaled by the ranks: cast to int64 first, as Paddle 3.3.1's PIR cast of the rank to a float fails (its
    kernel writes int64 where the result is declared otherwise)."""
    return x * paddle.cast(paddle.cast(rank, "int64"), x.dtype)


def _eig_moduli(x):
    values, vectors = paddle.linalg.eig(x)
    return paddle.abs(values), paddle.abs(vectors)


def _lu_solve(b, a, trans="N"):
    lu, pivots = paddle.linalg.lu(a + 3 * paddle.eye(a.shape[-1]))
    if paddle.framework.in_pir_mode():
        return paddle.linalg.lu_solve(b, lu, pivots, trans)
    return append("lu_solve", {"b": b, "lu": lu, "pivots": pivots}, {"trans": trans}, out_slot="out")


def _svdvals(x):
    if paddle.framework.in_pir_mode():
        return paddle.linalg.svdvals(x)
    return append("svdvals", {"x": x}, out_slot="s")


def _symmetric(x):
    return x + paddle.transpose(x, [*range(len(x.shape) - 2), len(x.shape) - 1, len(x.shape) - 2])


ROWS = table(
    "linalg_extra",
    ("eig_values", lambda x: paddle.as_real(paddle.linalg.eig(x)[0]), f(3, 3)),
    ("eig_vectors_abs", lambda x: paddle.abs(paddle.linalg.eig(x)[1]), f(2, 3, 3)),
    ("eig_both", lambda x: _eig_moduli(x), f(4, 4)),
    ("eigvals", lambda x, a: x * paddle.abs(paddle.linalg.eigvals(a)), f(4), const(4, 4)),
    ("eigvalsh", lambda x: paddle.linalg.eigvalsh(_symmetric(x)), f(3, 3)),
    ("eigvalsh_upper", lambda x: paddle.linalg.eigvalsh(_symmetric(x), UPLO="U"), f(2, 3, 3)),
    ("matrix_rank", lambda x, a: _ranked(x, paddle.linalg.matrix_rank(a)), f(2), given(DEFICIENT, "float32")),
    ("matrix_rank_tol", lambda x, a: _ranked(x, paddle.linalg.matrix_rank(a, tol=0.5)), f(2),
     given(DEFICIENT, "float32")),
    ("matrix_rank_tol_tensor", lambda x, a, tol: _ranked(x, paddle.linalg.matrix_rank(a, tol=tol)), f(2),
     given(DEFICIENT, "float32"), given([0.5, 0.01], "float32")),
    ("matrix_rank_hermitian", lambda x, a: _ranked(x, paddle.linalg.matrix_rank(a, hermitian=True)), f(2),
     given(SYMMETRIC, "float32")),
    ("matrix_rank_hermitian_tol", lambda x, a: _ranked(x, paddle.linalg.matrix_rank(a, tol=1.5, hermitian=True)),
     f(2), given(SYMMETRIC, "float32")),
    ("matrix_rank_atol_rtol", lambda x, a: _ranked(x, paddle.linalg.matrix_rank(a, atol=0.01, rtol=0.3)), f(2),
     given(DEFICIENT, "float32")),
    ("matrix_rank_atol", lambda x, a: _ranked(x, paddle.linalg.matrix_rank(a, atol=0.5)), f(2),
     given(DEFICIENT, "float32")),
    ("matrix_rank_rtol_hermitian", lambda x, a: _ranked(x, paddle.linalg.matrix_rank(a, rtol=0.5, hermitian=True)),
     f(2), given(SYMMETRIC, "float32")),
    ("lu_solve", lambda b, a: _lu_solve(b, a), f(3, 2), f(3, 3)),
    ("lu_solve_trans_batched", lambda b, a: _lu_solve(b, a, "T"), f(2, 3, 2), f(2, 3, 3)),
    ("svdvals", lambda x: _svdvals(x), f(4, 3)),
    ("svdvals_batched_wide", lambda x: _svdvals(x), f(2, 2, 4)),
    ("tril_indices", lambda x: x * paddle.cast(paddle.tril_indices(4, 3, -1), x.dtype), f(2, 6)),
    ("triu_indices", lambda x: x * paddle.cast(paddle.triu_indices(4, 3, 1), x.dtype), f(2, 3)),
    ("triu_indices_square", lambda x: x * paddle.cast(paddle.triu_indices(3), x.dtype), f(2, 6)),
)
