"""Kernels of gradc.ops.linalg. Each computes in float64 and returns the input's dtype; a matrix the op
cannot use (singular, not positive definite) is a ValueError naming the slot, which the executor reports
with the op and its inputs."""

from __future__ import annotations

import numpy as np

from ...ops.linalg import holds_vectors
from . import kernel
from .broadcast import unbroadcast
from .matmul import t


def f64(k, slot: str) -> np.ndarray:
    """An input as float64 (kernels compute in it, then give back the input's dtype)."""
    return np.asarray(k.x(slot), np.float64)


def inverted(a: np.ndarray, slot: str) -> np.ndarray:
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise ValueError(f"{slot} holds a singular matrix, which has no inverse") from None


def solved(a: np.ndarray, b: np.ndarray, slot: str) -> np.ndarray:
    """a^-1 b, batch dims broadcast."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    try:
        return np.linalg.solve(np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:]))
    except np.linalg.LinAlgError:
        raise ValueError(f"{slot} holds a singular matrix: the system has no unique solution") from None


def triangle(m: np.ndarray, upper: bool) -> np.ndarray:
    return np.triu(m) if upper else np.tril(m)


def onto_triangle(sym: np.ndarray, upper: bool) -> np.ndarray:
    """The gradient with respect to the triangle an op reads a symmetric matrix from, given ``sym``, the
    gradient with respect to that symmetric matrix: an element off the diagonal stands for two."""
    doubled = triangle(sym + t(sym), upper)
    return doubled - np.eye(sym.shape[-1]) * sym


@kernel("inverse")
def inverse(k):
    x = k.x("Input")
    return {"Output": inverted(f64(k, "Input"), "Input").astype(x.dtype)}


@kernel("inverse_grad")
def inverse_grad(k):
    inv = f64(k, "Output")
    return {"Input@GRAD": (-t(inv) @ k.x("Output@GRAD") @ t(inv)).astype(k.x("Output").dtype)}


@kernel("determinant")
def determinant(k):
    x = k.x("Input")
    return {"Out": np.asarray(np.linalg.det(f64(k, "Input")), x.dtype)}


def _others_product(s: np.ndarray) -> np.ndarray:
    """For each entry of the last axis, the product of the others (exclusive running products, no division)."""
    ones = np.ones_like(s[..., :1])
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], -1), -1)[..., ::-1]
    return before * after


@kernel("determinant_grad", shape_only=("Out",))
def determinant_grad(k):
    """dA = dOut adj(A)^T, with adj(A)^T = det(U) det(VH) U diag(prod of the other s) VH from A = U S VH:
    the cofactors, defined for singular matrices too."""
    x = k.x("Input")
    u, s, vh = np.linalg.svd(f64(k, "Input"))
    orientation = (np.linalg.det(u) * np.linalg.det(vh))[..., None, None]
    cofactors = orientation * (u * _others_product(s)[..., None, :]) @ vh
    return {"Input@GRAD": (f64(k, "Out@GRAD")[..., None, None] * cofactors).astype(x.dtype)}


@kernel("slogdeterminant")
def slogdeterminant(k):
    """[sign, log|det|] on a new leading dim; a singular matrix gives sign 0 and -inf."""
    x = k.x("Input")
    sign, logabs = np.linalg.slogdet(f64(k, "Input"))
    return {"Out": np.stack([sign, logabs]).astype(x.dtype)}


@kernel("slogdeterminant_grad")
def slogdeterminant_grad(k):
    """dA = dlog|det| A^-T (the sign is piecewise constant); NaN for a singular matrix (sign 0), where log|det|
    has no derivative (Paddle 3.3.1 fills all of dA with NaN when any matrix of the batch is singular)."""
    x, a = k.x("Input"), f64(k, "Input")
    singular = (np.asarray(k.x("Out"))[0] == 0)[..., None, None]
    dlog = f64(k, "Out@GRAD")[1][..., None, None]
    grad = np.where(singular, np.nan, dlog * t(np.linalg.inv(np.where(singular, np.eye(a.shape[-1]), a))))
    return {"Input@GRAD": grad.astype(x.dtype)}


@kernel("cholesky")
def cholesky(k):
    """L from the lower triangle (numpy reads it); upper: U = L^T, L from the upper triangle."""
    x, a, upper = k.x("X"), f64(k, "X"), k.attr("upper")
    try:
        factor = np.linalg.cholesky(t(a) if upper else a)
    except np.linalg.LinAlgError:
        raise ValueError("X is not positive definite: it has no Cholesky factor") from None
    return {"Out": (t(factor) if upper else factor).astype(x.dtype)}


def _cholesky_sym_grad(low: np.ndarray, dlow: np.ndarray) -> np.ndarray:
    """The gradient with respect to symmetric A of L = cholesky(A): L^-T Phi(L^T dL) L^-1, symmetrised, where Phi
    keeps the lower triangle with the diagonal halved."""
    phi = np.tril(t(low) @ dlow)
    phi -= 0.5 * np.eye(low.shape[-1]) * phi
    inv = inverted(low, "Out")
    grad = t(inv) @ phi @ inv
    return 0.5 * (grad + t(grad))


@kernel("cholesky_grad")
def cholesky_grad(k):
    out, upper = k.x("Out"), k.attr("upper")
    low, dlow = f64(k, "Out"), f64(k, "Out@GRAD")
    if upper:
        low, dlow = t(low), t(dlow)
    return {"X@GRAD": onto_triangle(_cholesky_sym_grad(low, dlow), upper).astype(out.dtype)}


def _cholesky_product(factor: np.ndarray, upper: bool) -> np.ndarray:
    """A = L L^T from the lower triangle of the factor, or U^T U from its upper triangle."""
    tri = triangle(factor, upper)
    return t(tri) @ tri if upper else tri @ t(tri)


@kernel("cholesky_solve")
def cholesky_solve(k):
    a = _cholesky_product(f64(k, "Y"), k.attr("upper"))
    return {"Out": solved(a, f64(k, "X"), "Y").astype(k.x("X").dtype)}


@kernel("cholesky_solve_grad")
def cholesky_solve_grad(k):
    """dB = A^-1 dOut, dA = -dB Out^T; through A = L L^T: dL = tril((dA + dA^T) L) (upper: triu(U (dA + dA^T))).
    Paddle 3.3.1's Y@GRAD differs from central differences."""
    b, factor, upper = k.x("X"), k.x("Y"), k.attr("upper")
    tri = triangle(f64(k, "Y"), upper)
    a = _cholesky_product(tri, upper)
    db = solved(a, f64(k, "Out@GRAD"), "Y")
    da = -db @ t(f64(k, "Out"))
    sym = da + t(da)
    dfactor = triangle(tri @ sym if upper else sym @ tri, upper)
    return k.grads({"X@GRAD": lambda: unbroadcast(db, b.shape).astype(b.dtype),
                    "Y@GRAD": lambda: unbroadcast(dfactor, factor.shape).astype(factor.dtype)})


def _triangular(k) -> np.ndarray:
    """The matrix triangular_solve solves with: X's triangle, unit diagonal if unitriangular, transposed if asked."""
    tri = triangle(f64(k, "X"), k.attr("upper"))
    if k.attr("unitriangular"):
        tri = tri - np.eye(tri.shape[-1]) * tri + np.eye(tri.shape[-1])
    return t(tri) if k.attr("transpose") else tri


@kernel("triangular_solve")
def triangular_solve(k):
    return {"Out": solved(_triangular(k), f64(k, "Y"), "X").astype(k.x("Y").dtype)}


@kernel("triangular_solve_grad")
def triangular_solve_grad(k):
    """dY = M^-T dOut, dM = -dY Out^T for the matrix M solved with, then back onto X's triangle (its diagonal
    gets nothing when unitriangular)."""
    x, b = k.x("X"), k.x("Y")
    matrix = _triangular(k)
    db = solved(t(matrix), f64(k, "Out@GRAD"), "X")
    dm = -db @ t(f64(k, "Out"))
    dx = triangle(t(dm) if k.attr("transpose") else dm, k.attr("upper"))
    if k.attr("unitriangular"):
        dx = dx - np.eye(dx.shape[-1]) * dx
    return k.grads({"X@GRAD": lambda: unbroadcast(dx, x.shape).astype(x.dtype),
                    "Y@GRAD": lambda: unbroadcast(db, b.shape).astype(b.dtype)})


def _as_matrices(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, bool]:
    """solve's right-hand side as [..., N, K], and whether it held vectors (gradc.ops.linalg.holds_vectors)."""
    vectors = holds_vectors(a.shape, b.shape)
    return (b[..., None] if vectors else b), vectors


@kernel("solve")
def solve(k):
    a = k.x("X")
    rhs, vectors = _as_matrices(a, f64(k, "Y"))
    out = solved(f64(k, "X"), rhs, "X")
    return {"Out": (out[..., 0] if vectors else out).astype(a.dtype)}


@kernel("solve_grad")
def solve_grad(k):
    """dY = X^-T dOut, dX = -dY Out^T."""
    a, b = k.x("X"), k.x("Y")
    dout, vectors = _as_matrices(a, f64(k, "Out@GRAD"))
    out, _ = _as_matrices(a, f64(k, "Out"))
    db = solved(t(f64(k, "X")), dout, "X")
    da = -db @ t(out)
    return k.grads({"X@GRAD": lambda: unbroadcast(da, a.shape).astype(a.dtype),
                    "Y@GRAD": lambda: unbroadcast(db[..., 0] if vectors else db, b.shape).astype(b.dtype)})


def _power_base(x: np.ndarray, n: int) -> np.ndarray:
    """The matrix raised to |n|: X, or its inverse for n < 0."""
    return inverted(x, "X") if n < 0 else x


@kernel("matrix_power")
def matrix_power(k):
    x, n = k.x("X"), k.attr("n")
    base = _power_base(f64(k, "X"), n)
    return {"Out": np.linalg.matrix_power(base, abs(n)).astype(x.dtype)}


@kernel("matrix_power_grad", shape_only=("Out",))
def matrix_power_grad(k):
    """For Out = B^m: dB = sum over k < m of (B^T)^k dOut (B^T)^(m-1-k); for n < 0, B = X^-1 and
    dX = -B^T dB B^T."""
    x, n = k.x("X"), k.attr("n")
    base = _power_base(f64(k, "X"), n)
    dout = f64(k, "Out@GRAD")
    powers = [np.broadcast_to(np.eye(x.shape[-1]), x.shape)][:abs(n)]   # (B^T)^k for k < m: none for n = 0
    while len(powers) < abs(n):
        powers.append(powers[-1] @ t(base))
    dbase = sum((p @ dout @ q for p, q in zip(powers, reversed(powers))), np.zeros(x.shape))
    dx = -t(base) @ dbase @ t(base) if n < 0 else dbase
    return {"X@GRAD": dx.astype(x.dtype)}
