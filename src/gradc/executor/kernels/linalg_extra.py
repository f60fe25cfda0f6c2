"""Kernels of gradc.ops.linalg_extra: eig, eigvals, eigvalsh, matrix_rank(_atol_rtol), lu_solve, svdvals and the
triangle indices. They compute in float64 (complex128) and give back the input's dtype (its complex one). The forward
ops but svdvals and lu_solve take complex matrices too (their backward refuses them: gradc.backward.path)."""

from __future__ import annotations

import math

import numpy as np

from ...limits import check_allocation
from ...ops.linalg_extra import triangle_count
from . import kernel
from .linalg import f64, onto_triangle
from .linalg_decomp import row_order
from .matmul import t

COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}
REAL_OF = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}
# matrix_rank_atol_rtol without rtol: an atol this close to 0 counts as none (Paddle 3.3.1, found by bisection)
NO_ATOL = 1e-15


def _wide(x, slot: str) -> np.ndarray:
    """``x`` in float64 (complex128 when complex), refused where it is not finite."""
    a = np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{slot} holds NaN or infinite values, which have no eigen or singular values")
    return a


def _complex(x: np.ndarray):
    """The complex dtype of eigenvalues of ``x``: its own when complex."""
    return COMPLEX_OF.get(x.dtype, x.dtype)


def _real(x: np.ndarray):
    """The dtype of singular values (eigenvalues of Hermitian matrices) of ``x``."""
    return REAL_OF.get(x.dtype, x.dtype)


def _complex_grad(k, slot: str, like: np.ndarray) -> np.ndarray:
    """An output's complex grad, zeros like ``like`` where the slot is empty."""
    value = k.optional(slot)
    return np.zeros_like(like) if value is None else np.asarray(value, np.complex128)


@kernel("eig")
def eig(k):
    """LAPACK geev's eigenvalues and unit-norm eigenvectors (columns), as Paddle's float64 ones."""
    values, vectors = np.linalg.eig(_wide(k.x("X"), "X"))
    dtype = _complex(k.x("X"))
    return {"Eigenvalues": values.astype(dtype), "Eigenvectors": vectors.astype(dtype)}


@kernel("eig_grad")
def eig_grad(k):
    """The real part of V^-H (diag(dw) + (V^H dV - V^H V diag(Re(V^H dV))) / conj(E)) V^H, E[i, j] = w_j - w_i:
    the second term keeps each eigenvector unit-norm. Losses of the eigenvalues alone have a gradient at repeated
    eigenvalues too (of a diagonalizable X); the eigenvectors' has none there (inf or NaN)."""
    values = np.asarray(k.x("Eigenvalues"), np.complex128)
    vectors = np.asarray(k.x("Eigenvectors"), np.complex128)
    dvalues, dvectors = _complex_grad(k, "Eigenvalues@GRAD", values), _complex_grad(k, "Eigenvectors@GRAD", vectors)
    adjoint = np.conj(t(vectors))
    projected = adjoint @ dvectors
    norms = np.real(np.diagonal(projected, axis1=-2, axis2=-1))
    inner = projected - (adjoint @ vectors) * norms[..., None, :]
    gaps = np.conj(values[..., None, :] - values[..., :, None]) + np.eye(values.shape[-1])
    with np.errstate(divide="ignore", invalid="ignore"):   # 0 / 0 where eigenvalues repeat and V has no grad: 0
        inner = np.where(inner == 0, 0, inner / gaps)         # (as PyTorch; Paddle gives NaN)
    size = np.arange(values.shape[-1])
    inner[..., size, size] = dvalues
    grad = np.linalg.solve(adjoint, inner @ adjoint)
    return {"X@GRAD": np.real(grad).astype(k.x("Eigenvectors").real.dtype)}


@kernel("eigvals")
def eigvals(k):
    """In the order geev gives them for X^T: Paddle hands LAPACK its row-major matrix as it is."""
    values = np.linalg.eigvals(t(_wide(k.x("X"), "X")))
    return {"Out": values.astype(_complex(k.x("X")))}


@kernel("eigvalsh")
def eigvalsh(k):
    x = k.x("X")
    values, vectors = np.linalg.eigh(_wide(x, "X"), UPLO=k.attr("UPLO"))
    return {"Eigenvalues": values.astype(_real(x)), "Eigenvectors": vectors.astype(x.dtype)}


@kernel("eigvalsh_grad")
def eigvalsh_grad(k):
    """V diag(dw) V^T, onto the UPLO triangle of X the forward read."""
    vectors, dvalues = f64(k, "Eigenvectors"), f64(k, "Eigenvalues@GRAD")
    sym = (vectors * dvalues[..., None, :]) @ t(vectors)
    return {"X@GRAD": onto_triangle(sym, k.attr("UPLO") == "U").astype(k.x("Eigenvectors").dtype)}


def _spectrum(x: np.ndarray, slot: str, hermitian: bool) -> np.ndarray:
    """Singular values, or with ``hermitian`` |eigenvalues| of the lower triangle, [..., min(M, N)]."""
    a = _wide(x, slot)
    return np.abs(np.linalg.eigvalsh(a, UPLO="L")) if hermitian else np.linalg.svd(a, compute_uv=False)


def _rank(values: np.ndarray, first, second) -> np.ndarray:
    """The number of values strictly above max(first, second) per matrix, as int64 (Paddle's kernel writes it). The
    max is Paddle's GreaterElementFunctor, first where first > second, else second: second where first is NaN."""
    tolerance = np.where(first > second, first, second)
    return np.sum(values > tolerance[..., None], axis=-1).astype(np.int64)


def _default_rtol(x: np.ndarray) -> float:
    return float(np.finfo(_real(x)).eps) * max(x.shape[-2:])


def _largest(values: np.ndarray) -> np.ndarray:
    return values.max(-1, initial=0.0)


@kernel("matrix_rank")
def matrix_rank(k):
    """use_default_tol: above max(0, eps * max(M, N) * the largest value); else above tol, the attribute or
    TolTensor (broadcast against the batch; NaN counts as 0, a negative tol too)."""
    x = k.x("X")
    values = _spectrum(x, "X", k.attr("hermitian"))
    tolerance = k.optional("TolTensor")
    atol = np.asarray(k.attr("tol") if tolerance is None else tolerance, np.float64)
    if k.attr("use_default_tol") and tolerance is None:
        atol = np.zeros(())
    rtol = _default_rtol(x) if k.attr("use_default_tol") else 0.0
    return {"Out": _rank(values, atol, rtol * _largest(values))}


@kernel("matrix_rank_atol_rtol")
def matrix_rank_atol_rtol(k):
    """Above max(rtol * the largest value, atol) (a NaN rtol counts as none, a NaN atol counts nothing); without
    rtol, rtol is eps * max(M, N) where atol is 0, else 0."""
    x = k.x("x")
    values = _spectrum(x, "x", k.attr("hermitian"))
    atol = np.asarray(k.x("atol"), np.float64)
    given = k.optional("rtol")
    rtol = np.where(np.abs(atol) < NO_ATOL, _default_rtol(x), 0.0) if given is None else np.asarray(given, np.float64)
    return {"out": _rank(values, rtol * _largest(values), atol)}


def _factors(k) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(L, U, order) of lu: unit lower L, upper U and the rows of A that make up P^T A = L U."""
    packed = f64(k, "lu")
    n = packed.shape[-1]
    pivots = np.asarray(k.x("pivots")).reshape(math.prod(packed.shape[:-2]), n)   # -1 fails on empty matrices
    if pivots.size and (pivots.min() < 1 or pivots.max() > n):
        bad = pivots[(pivots < 1) | (pivots > n)][0]
        raise ValueError(f"pivots holds {bad}, outside the rows [1, {n}] (1-based, as lu writes them)")
    up = np.triu(packed)
    if np.any(np.diagonal(up, axis1=-2, axis2=-1) == 0):
        raise ValueError("lu holds a singular matrix (U has a zero pivot): the system has no unique solution")
    return np.tril(packed, -1) + np.eye(n), up, row_order(pivots, n).reshape(*packed.shape[:-1])


def _take_rows(m: np.ndarray, order: np.ndarray) -> np.ndarray:
    return np.take_along_axis(m, order[..., None], axis=-2)


def _put_rows(m: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The inverse of _take_rows: row i of ``m`` goes to row order[i]."""
    out = np.empty_like(m)
    np.put_along_axis(out, np.broadcast_to(order[..., None], m.shape), m, axis=-2)
    return out


def _solve_lu(low, up, order, b: np.ndarray, transposed: bool) -> np.ndarray:
    """A x = b for A = P L U, or A^T x = b: L U x = P^T b, or U^T L^T (P^T x) = b."""
    if b.shape[:-1] != low.shape[:-1]:   # fed shapes that lie: taking b's rows by order would drop or reuse some
        raise ValueError(f"b {list(b.shape)} does not hold the rows of the systems of lu {list(low.shape)}")
    if transposed:
        return _put_rows(np.linalg.solve(t(low), np.linalg.solve(t(up), b)), order)
    return np.linalg.solve(up, np.linalg.solve(low, _take_rows(b, order)))


@kernel("lu_solve")
def lu_solve(k):
    """trans 'T' and 'C' both solve with A^T (real matrices)."""
    b = k.x("b")
    low, up, order = _factors(k)
    return {"out": _solve_lu(low, up, order, np.asarray(b, np.float64), k.attr("trans") != "N").astype(b.dtype)}


@kernel("lu_solve_grad")
def lu_solve_grad(k):
    """db = A^-T dout (A^-1 dout for trans); dA = -db out^T (-out db^T); lu's grad is dL = tril(P^T dA U^T, -1)
    below the diagonal and dU = triu(L^T P^T dA) on and above it."""
    transposed = k.attr("trans") != "N"
    low, up, order = _factors(k)
    out, dout = f64(k, "out"), f64(k, "out@GRAD")
    db = _solve_lu(low, up, order, dout, not transposed)
    da = -(out @ t(db) if transposed else db @ t(out))
    permuted = _take_rows(da, order)
    dlu = np.tril(permuted @ t(up), -1) + np.triu(t(low) @ permuted)
    return {"b@GRAD": db.astype(k.x("b").dtype), "lu@GRAD": dlu.astype(k.x("lu").dtype)}


@kernel("svdvals")
def svdvals(k):
    x = k.x("x")
    return {"s": np.linalg.svd(_wide(x, "x"), compute_uv=False).astype(x.dtype)}


@kernel("svdvals_grad")
def svdvals_grad(k):
    """U diag(ds) V^T, from x's SVD again."""
    x = k.x("x")
    u, _, vh = np.linalg.svd(np.asarray(x, np.float64), full_matrices=False)
    return {"x@GRAD": ((u * f64(k, "s@GRAD")[..., None, :]) @ vh).astype(x.dtype)}


# bytes per pair at the peak: out (int64) and, in the worst case of one pair per row, five int64 working arrays
PAIR_BYTES = 7 * 8


def _triangle(k, rows: int, cols: int, lower: bool) -> dict:
    """[2, count] (row, col) pairs of the triangle, row by row, built from its non-empty rows only (np.tril_indices
    would build a rows x cols mask: 2**31 entries for one row of 2**31 columns)."""
    offset, dtype = k.attr("offset"), np.int32 if k.attr("dtype") == 2 else np.int64
    count = triangle_count(rows, cols, offset, lower)
    check_allocation(count, PAIR_BYTES, f"{k.op.type}'s out of shape [2, {count}] (with its working arrays)")
    # with cols > 0 each row of these ranges adds at least one pair, so they are at most count long
    first, stop = (max(0, min(rows, -offset)), rows) if lower else (0, max(0, min(rows, cols - offset)))
    row = np.arange(first, stop if count else first)
    start = np.zeros_like(row) if lower else np.maximum(row + offset, 0)
    lengths = (np.minimum(row + offset + 1, cols) if lower else cols) - start
    out = np.empty((2, count), dtype)
    out[0] = np.repeat(row, lengths)
    out[1] = np.arange(count)
    out[1] += np.repeat(start - (np.cumsum(lengths) - lengths), lengths)   # a pair's col minus its position
    return {"out": out}


@kernel("tril_indices")
def tril_indices(k):
    return _triangle(k, k.attr("rows"), k.attr("cols"), True)


@kernel("triu_indices")
def triu_indices(k):
    return _triangle(k, k.attr("row"), k.attr("col"), False)
