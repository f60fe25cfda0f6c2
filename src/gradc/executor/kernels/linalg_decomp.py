"""Kernels of gradc.ops.linalg_decomp: qr, svd, eigh, lu, lu_unpack and lstsq, in float64, returned in the input's
dtype."""

from __future__ import annotations

import numpy as np

from . import kernel
from .linalg import f64, onto_triangle
from .matmul import t


def _grad_or_zeros(k, slot: str, like: np.ndarray) -> np.ndarray:
    """An output's grad as float64, zeros like ``like`` where the slot is empty."""
    value = k.optional(slot)
    return np.zeros_like(like) if value is None else np.asarray(value, np.float64)


@kernel("qr")
def qr(k):
    x, mode = k.x("X"), k.attr("mode")
    a = np.asarray(x, np.float64)
    if mode == "r":
        return {"Q": np.zeros(0, x.dtype), "R": np.linalg.qr(a, mode="r").astype(x.dtype)}
    q, r = np.linalg.qr(a, mode=mode)
    return {"Q": q.astype(x.dtype), "R": r.astype(x.dtype)}


def _copyltu(m: np.ndarray) -> np.ndarray:
    """The lower triangle mirrored onto the upper one."""
    return np.tril(m) + t(np.tril(m, -1))


def _qr_tall_grad(q, r, dq, dr):
    """dA = (dQ + Q copyltu(R dR^T - dQ^T Q)) R^-T for A = Q R with M >= N (R square, its upper triangle)."""
    rhs = dq + q @ _copyltu(r @ t(dr) - t(dq) @ q)
    return t(np.linalg.solve(np.triu(r), t(rhs)))


@kernel("qr_grad")
def qr_grad(k):
    """The gradient of A = Q R; for M < N, A = [X | Y] with X = Q R[:, :M] and Y = Q R[:, M:]. mode 'r' has no Q
    output: its gradient factors X again (Paddle 3.3.1 refuses it). mode 'complete' with M > N has none: Q's last
    M - N columns are not functions of X."""
    x, mode = k.x("X"), k.attr("mode")
    a = np.asarray(x, np.float64)
    m, n = a.shape[-2:]
    if mode == "complete" and m > n:
        raise ValueError(f"qr's gradient is not defined for mode 'complete' when M > N (X is {m} x {n})")
    q, r = np.linalg.qr(a) if mode == "r" else (f64(k, "Q"), f64(k, "R"))
    dq = np.zeros_like(q) if mode == "r" else _grad_or_zeros(k, "Q@GRAD", q)
    dr = _grad_or_zeros(k, "R@GRAD", r)
    if np.any(np.diagonal(r[..., :, :min(m, n)], axis1=-2, axis2=-1) == 0):
        raise ValueError("X is rank deficient: qr's gradient needs R's diagonal to be nonzero")
    if m >= n:
        return {"X@GRAD": _qr_tall_grad(q, r, dq, dr).astype(x.dtype)}
    y, dv = a[..., m:], dr[..., m:]
    dx = _qr_tall_grad(q, r[..., :m], dq + y @ t(dv), dr[..., :m])
    return {"X@GRAD": np.concatenate([dx, q @ dv], -1).astype(x.dtype)}


@kernel("svd")
def svd(k):
    x = k.x("X")
    u, s, vh = np.linalg.svd(np.asarray(x, np.float64), full_matrices=k.attr("full_matrices"))
    return {"U": u.astype(x.dtype), "S": s.astype(x.dtype), "VH": vh.astype(x.dtype)}


def _off_diagonal(values: np.ndarray) -> np.ndarray:
    """E[i, j] = values[j] - values[i], with 1 on the diagonal (the terms it divides are 0 there)."""
    gaps = values[..., None, :] - values[..., :, None]
    return gaps + np.eye(values.shape[-1])


@kernel("svd_grad")
def svd_grad(k):
    """dA = U [skew(U^T dU) S + S skew(V^T dV) + diag(dS)] V^T plus the parts of dU, dV outside the spans of U, V
    (divided by S), where skew(M) = (M - M^T) / (S_j^2 - S_i^2). With full_matrices only the first K columns of U
    and rows of VH (and of their grads) count, as in Paddle: the others are not functions of X."""
    x = k.x("X")
    s, u_all, vh_all = f64(k, "S"), f64(k, "U"), f64(k, "VH")
    size = s.shape[-1]
    u, vh = u_all[..., :size], vh_all[..., :size, :]
    du = _grad_or_zeros(k, "U@GRAD", u_all)[..., :size]
    dv = t(_grad_or_zeros(k, "VH@GRAD", vh_all)[..., :size, :])
    ds = _grad_or_zeros(k, "S@GRAD", s)
    v, squares = t(vh), _off_diagonal(s * s)
    u_skew, v_skew = (t(a) @ da - t(da) @ a for a, da in ((u, du), (v, dv)))
    inner = (u_skew / squares) * s[..., None, :] + s[..., :, None] * (v_skew / squares)
    inner = inner + np.eye(size) * ds[..., None, :]
    grad = u @ inner @ vh
    if u.shape[-2] > size:   # M > K: the part of dU outside U's columns
        grad = grad + ((du - u @ (t(u) @ du)) / s[..., None, :]) @ vh
    if v.shape[-2] > size:   # N > K: the part of dV outside V's columns
        grad = grad + u @ t((dv - v @ (t(v) @ dv)) / s[..., None, :])
    return {"X@GRAD": grad.astype(x.dtype)}


@kernel("eigh")
def eigh(k):
    x = k.x("X")
    values, vectors = np.linalg.eigh(np.asarray(x, np.float64), UPLO=k.attr("UPLO"))
    return {"Eigenvalues": values.astype(x.dtype), "Eigenvectors": vectors.astype(x.dtype)}


@kernel("eigh_grad")
def eigh_grad(k):
    """dS = V (diag(dw) + (V^T dV) / (w_j - w_i)) V^T for the symmetric matrix S eigh reads, symmetrised, then onto
    the UPLO triangle of X it reads S from (Paddle 3.3.1 gives the symmetric dS itself)."""
    values = f64(k, "Eigenvalues")
    vectors = f64(k, "Eigenvectors")
    dvalues = _grad_or_zeros(k, "Eigenvalues@GRAD", values)
    dvectors = _grad_or_zeros(k, "Eigenvectors@GRAD", vectors)
    mixing = (t(vectors) @ dvectors) / _off_diagonal(values)
    mixing = mixing - np.eye(values.shape[-1]) * mixing + np.eye(values.shape[-1]) * dvalues[..., None, :]
    grad = vectors @ mixing @ t(vectors)
    sym = 0.5 * (grad + t(grad))
    return {"X@GRAD": onto_triangle(sym, k.attr("UPLO") == "U").astype(k.x("Eigenvectors").dtype)}


def _lu_factor(a: np.ndarray, pivoting: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LAPACK getrf's factorisation of each matrix of a [B, M, N] stack: (packed L\\U, 1-based row swaps [B, K],
    infos [B]). Partial pivoting swaps in the first row of largest magnitude; a zero pivot leaves its column
    unscaled and sets the info (the first one's 1-based index)."""
    lu = a.copy()
    batch, rows = np.arange(lu.shape[0]), lu.shape[1]
    size = min(lu.shape[1:])
    pivots = np.zeros((lu.shape[0], size), np.int32)
    infos = np.zeros(lu.shape[0], np.int32)
    for j in range(size):
        best = j + np.argmax(np.abs(lu[:, j:, j]), axis=1) if pivoting else np.full(lu.shape[0], j)
        pivots[:, j] = best + 1
        lu[batch, j], lu[batch, best] = lu[batch, best], lu[batch, j].copy()
        pivot = lu[:, j, j]
        zero = pivot == 0
        infos[zero & (infos == 0)] = j + 1
        if j + 1 < rows:
            lu[:, j + 1:, j] /= np.where(zero, 1.0, pivot)[:, None]
            lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j:j + 1] * lu[:, j:j + 1, j + 1:]
    return lu, pivots, infos


@kernel("lu")
def lu(k):
    """Partial pivoting; without it (pivots=False, which Paddle 3.3.1 refuses on the CPU) the rows stay in order."""
    x = k.x("X")
    a = np.asarray(x, np.float64)
    packed, pivots, infos = _lu_factor(a.reshape(-1, *a.shape[-2:]), k.attr("pivots"))
    batch = a.shape[:-2]
    return {"Out": packed.reshape(a.shape).astype(x.dtype), "Pivots": pivots.reshape(*batch, pivots.shape[-1]),
            "Infos": infos.reshape(batch)}


def row_order(pivots: np.ndarray, rows: int) -> np.ndarray:
    """The rows of A that make up P^T A = L U, from the row swaps applied in order: [B, M]."""
    order = np.tile(np.arange(rows), (pivots.shape[0], 1))
    batch = np.arange(pivots.shape[0])
    for j in range(pivots.shape[1]):
        swap = pivots[:, j] - 1
        order[batch, j], order[batch, swap] = order[batch, swap], order[batch, j].copy()
    return order


def _lu_square_grad(low, up, dlow, dup):
    """dB for B = L U (square, L unit lower): L^-T (tril(L^T dL, -1) + triu(dU U^T)) U^-T."""
    middle = np.tril(t(low) @ dlow, -1) + np.triu(dup @ t(up))
    return t(np.linalg.solve(up, t(np.linalg.solve(t(low), middle))))


@kernel("lu_grad")
def lu_grad(k):
    """The gradient through P^T A = L U. M > N: the rows below, L2 = B2 U^-1, add -L2^T dL2 U^-T to dU;
    M < N: the columns right of, U2 = L^-1 B2, add -L^-T dU2 U2^T to dL."""
    x = k.x("X")
    packed = f64(k, "Out")
    dpacked = f64(k, "Out@GRAD")
    m, n = packed.shape[-2:]
    size = min(m, n)
    low = np.tril(packed[..., :, :size], -1) + np.eye(m, size)
    up, dlow, dup = np.triu(packed[..., :size, :]), np.tril(dpacked[..., :, :size], -1), np.triu(dpacked[..., :size, :])
    if np.any(np.diagonal(up[..., :size], axis1=-2, axis2=-1) == 0):
        raise ValueError("X is singular (U has a zero pivot): lu's gradient needs an invertible U")
    low1, up1, dlow1, dup1 = low[..., :size, :], up[..., :size], dlow[..., :size, :], dup[..., :size]
    if m > n:
        extra = t(np.linalg.solve(up1, t(dlow[..., size:, :])))   # dB2 = dL2 U^-T
        dup1 = dup1 - t(low[..., size:, :]) @ extra
    elif m < n:
        dup2 = dup[..., size:]
        extra = np.linalg.solve(t(low1), dup2)               # dB2 = L^-T dU2
        dlow1 = dlow1 - np.tril(extra @ t(up[..., size:]), -1)
    grad = _lu_square_grad(low1, up1, dlow1, dup1)
    if m != n:
        grad = np.concatenate([grad, extra], -2 if m > n else -1)
    flat = grad.reshape(-1, m, n)
    order = row_order(np.asarray(k.x("Pivots")).reshape(flat.shape[0], -1), m)
    dx = np.empty_like(flat)
    dx[np.arange(flat.shape[0])[:, None], order] = flat
    return {"X@GRAD": dx.reshape(packed.shape).astype(x.dtype)}


@kernel("lu_unpack")
def lu_unpack(k):
    x = k.x("X")
    packed = np.asarray(x, np.float64)
    m, n = packed.shape[-2:]
    size = min(m, n)
    empty = np.zeros(0, x.dtype)
    results = {"Pmat": empty, "L": empty, "U": empty}
    if k.attr("unpack_ludata"):
        results["L"] = (np.tril(packed[..., :, :size], -1) + np.eye(m, size)).astype(x.dtype)
        results["U"] = np.triu(packed[..., :size, :]).astype(x.dtype)
    if k.attr("unpack_pivots"):
        pivots = np.asarray(k.x("Pivots")).reshape(-1, np.shape(k.x("Pivots"))[-1])
        if pivots.size and (pivots.min() < 1 or pivots.max() > m):
            bad = pivots[(pivots < 1) | (pivots > m)][0]
            raise ValueError(f"Pivots holds {bad}, outside the rows [1, {m}] (1-based, as lu writes them)")
        order = row_order(pivots, m)
        pmat = np.zeros((order.shape[0], m, m), x.dtype)
        pmat[np.arange(order.shape[0])[:, None], order, np.arange(m)] = 1   # P^T X = X[order]
        results["Pmat"] = pmat.reshape(*packed.shape[:-2], m, m)
    return results


@kernel("lu_unpack_grad", shape_only=("X", "L", "U", "Pmat"))
def lu_unpack_grad(k):
    """X@GRAD: L's grad below the diagonal, U's on and above it, each where it came from."""
    x = k.x("X")
    m, n = x.shape[-2:]
    size = min(m, n)
    grad = np.zeros(x.shape, np.float64)
    grad[..., :, :size] += np.tril(f64(k, "L@GRAD"), -1)
    grad[..., :size, :] += np.triu(f64(k, "U@GRAD"))
    return {"X@GRAD": grad.astype(x.dtype)}


@kernel("lstsq")
def lstsq(k):
    """numpy's least squares (LAPACK gelsd: the minimum-norm solution) for every driver, with singular values under
    rcond times the largest treated as zero."""
    x, y, driver = k.x("X"), k.x("Y"), k.attr("driver")
    a, b = np.asarray(x, np.float64), np.asarray(y, np.float64)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a, b = (np.broadcast_to(v, batch + v.shape[-2:]).reshape(-1, *v.shape[-2:]) for v in (a, b))
    m, n = a.shape[-2:]
    solution, rank = np.zeros((len(a), n, b.shape[-1])), np.zeros(len(a), np.int32)
    singular = np.zeros((len(a), min(m, n)))
    for i, (ai, bi) in enumerate(zip(a, b)):
        solution[i], _, rank[i], singular[i] = np.linalg.lstsq(ai, bi, rcond=k.attr("rcond"))
    solution, rank, singular = (v.reshape(batch + v.shape[1:]) for v in (solution, rank, singular))
    full = m > n and driver != "gelsy" and (driver == "gels" or bool(np.all(rank == n)))
    residuals = ((np.asarray(x, np.float64) @ solution - np.asarray(y, np.float64)) ** 2).sum(-2) if full else \
        np.zeros(0)
    return {"Solution": solution.astype(x.dtype), "Residuals": residuals.astype(x.dtype), "Rank": rank,
            "SingularValues": singular.astype(x.dtype)}
