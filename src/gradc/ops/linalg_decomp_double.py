"""Second derivatives of gradc.ops.linalg_decomp: eigh_grad, svd_grad and qr_grad recomputed with differentiable ops
(gradc.ops.composite), so every order follows."""

from __future__ import annotations

from ..registry import defgrad
from . import linalg_decomp  # noqa: F401  (registers the grad ops)
from .composite import Formula, expansion, first
from .linalg_double import diagonal_part, identity, inverse, mm, mt, onto_triangle, triangle, unsqueezed


def _rows_and_columns(f: Formula, values: str) -> tuple[str, str]:
    """values [..., K] as a row [..., 1, K] and a column [..., K, 1] (axes from the end: no rank needed)."""
    return unsqueezed(f, values, -2), unsqueezed(f, values, -1)


def _gaps(f: Formula, values: str, like: str) -> str:
    """E[i, j] = values[j] - values[i], with 1 on the diagonal (where the terms it divides are 0)."""
    row, column = _rows_and_columns(f, values)
    return f.add(f.sub(row, column, like), identity(f, like), like)


def matrix_size(f: Formula, x: str) -> tuple[int, int, int]:
    """(rank, M, N) of ``x``, a batch of [M, N] matrices, each -1 where known at run time only (all three where the
    rank is: the makers then take the path for sizes known at run time, which needs no rank)."""
    shape = f.g.shape(x)
    return (-1, -1, -1) if shape is None else (len(shape), *shape[-2:])


def _first(f: Formula, x: str, axis: int) -> str:
    """x with ``axis`` cut to size 1, read for its shape only (a selection's). Counted from the end (x's rank
    unknown) by a mean over the axis: Paddle 3.3.1's legacy slice crashes (SIGSEGV) at a negative axis."""
    if axis >= 0:
        return f.slice(x, axis, 0, 1)
    return f.op("reduce_mean", {"X": x}, x, {"dim": [axis], "keep_dim": True, "reduce_all": False})


def selection(f: Formula, like: str) -> str:
    """The [P, Q] matrix with ones on its diagonal, shaped like ``like``: times it, a [.., Q] matrix keeps its first
    min(P, Q) columns (P >= Q: it gains P - Q zero ones), so cuts of sizes known at run time only need no slice."""
    return diagonal_part(f, f.fill_like(like, 1.0))


def rest(f: Formula, chosen: str) -> str:
    """I - chosen chosen^T: the projection onto the coordinates a selection leaves out (0 where it keeps all)."""
    kept = mm(f, chosen, chosen, tb=True)
    return f.sub(identity(f, kept), kept, kept)


@expansion
def _eigh_grad(f, g):
    """V (diag(dw) + (V^T dV) / E) V^T, symmetrised, onto the UPLO triangle."""
    values, vectors = first(g.I("Eigenvalues")), first(g.I("Eigenvectors"))
    dvalues, dvectors = first(g.I("Eigenvalues@GRAD")), first(g.I("Eigenvectors@GRAD"))
    mixing = f.div(mm(f, vectors, dvectors, ta=True), _gaps(f, values, vectors), vectors)
    row, _ = _rows_and_columns(f, dvalues)
    inner = f.add(f.sub(mixing, diagonal_part(f, mixing), mixing), f.mul(identity(f, vectors), row, vectors),
                  vectors)
    grad = mm(f, mm(f, vectors, inner), vectors, tb=True)
    sym = f.scale(f.add(grad, mt(f, grad), grad), 0.5)
    return {"X@GRAD": onto_triangle(f, sym, g.attr("UPLO") == "U")}


@expansion
def _svd_grad(f, g):
    """U [skew(U^T dU) / E S + S skew(V^T dV) / E + diag(dS)] VH, E[i, j] = S_j^2 - S_i^2, plus the parts of dU and
    dV outside the spans of U and V (divided by S); with full_matrices, the first K columns of U and rows of VH."""
    x, s, ds = first(g.I("X")), first(g.I("S")), first(g.I("S@GRAD"))
    u, vh, du, dvh = (first(g.I(slot)) for slot in ("U", "VH", "U@GRAD", "VH@GRAD"))
    n, m_rows, n_cols = matrix_size(f, x)
    size = min(m_rows, n_cols)
    if size >= 0:
        tall, wide = m_rows > size, n_cols > size
    else:   # sizes known at run time only: both outside parts, each zero (to rounding, at every order) when square
        tall = wide = True
    if g.attr("full_matrices") and size >= 0:
        u, du = (f.slice(v, n - 1, 0, size) for v in (u, du))
        vh, dvh = (f.slice(v, n - 2, 0, size) for v in (vh, dvh))
    elif g.attr("full_matrices"):   # K columns of U, rows of VH, through [M, K] and [N, K] selections
        ones, k_row = f.fill_like(x, 1.0), unsqueezed(f, f.fill_like(s, 1.0), -2)
        cut_u = selection(f, mm(f, _first(f, ones, n - 1 if n >= 0 else -1), k_row))
        cut_v = selection(f, mm(f, mt(f, _first(f, ones, n - 2 if n >= 0 else -2)), k_row))
        u, du = (mm(f, v, cut_u) for v in (u, du))
        vh, dvh = (mm(f, cut_v, v, ta=True) for v in (vh, dvh))
    uu, vv = mm(f, u, du, ta=True), mm(f, vh, dvh, tb=True)   # [..., K, K]
    square = identity(f, uu)
    s_row, s_column = _rows_and_columns(f, s)
    gaps = _gaps(f, f.mul(s, s, s), uu)
    u_part, v_part = (f.div(f.sub(a, mt(f, a), a), gaps, a) for a in (uu, vv))
    inner = f.add(f.add(f.mul(u_part, s_row, u_part), f.mul(s_column, v_part, v_part), u_part),
                  f.mul(square, _rows_and_columns(f, ds)[0], u_part), u_part)
    grad = mm(f, mm(f, u, inner), vh, like=x)
    if tall:
        outside = f.sub(du, mm(f, u, uu), du)
        grad = f.add(grad, mm(f, f.div(outside, s_row, outside), vh, like=x), x)
    if wide:
        outside = f.sub(dvh, mm(f, mt(f, vv), vh), dvh)
        grad = f.add(grad, mm(f, u, f.div(outside, s_column, outside), like=x), x)
    return {"X@GRAD": grad}


def _qr_tall(f: Formula, q: str, r: str, dq: str, dr: str) -> str:
    """(dQ + Q copyltu(R dR^T - dQ^T Q)) R^-T, copyltu mirroring the lower triangle onto the upper one."""
    m = f.sub(mm(f, r, dr, tb=True), mm(f, dq, q, ta=True), r)
    mirrored = f.add(triangle(f, m, False), mt(f, triangle(f, m, False, -1)), m)
    rhs = f.add(dq, mm(f, q, mirrored, like=dq), dq)
    solved = f.op("triangular_solve", {"X": r, "Y": mt(f, rhs)}, rhs, {"upper": True, "transpose": False,
                                                                        "unitriangular": False},
                  dims=lambda s: [*s[:-2], s[-1], s[-2]])
    return mt(f, solved)


def _qr_any_size(f: Formula, x: str, q: str, r: str, dq: str, dr: str) -> str:
    """The M < N form with R's first K columns (R1) chosen by an [N, K] selection E and the others (R2, Y) by its
    rest P: (tall form at R1, dQ + X P dR^T) E^T + Q dR P; for M >= N, E = I and P = 0 (the tall form alone)."""
    chosen = selection(f, mt(f, r))
    others = rest(f, chosen)
    dq_total = f.add(dq, mm(f, mm(f, x, others), dr, tb=True, like=dq), dq)
    tall = _qr_tall(f, q, mm(f, r, chosen), dq_total, mm(f, dr, chosen))
    return f.add(mm(f, tall, chosen, tb=True, like=x), mm(f, q, mm(f, dr, others), like=x), x)


@expansion
def _qr_grad(f, g):
    """As the kernel: for M < N, X = [X1 | Y] with X1 = Q R1 and Y = Q R2; mode 'r' factors X again."""
    x, dr = first(g.I("X")), first(g.I("R@GRAD"))
    n, m_rows, n_cols = matrix_size(f, x)
    size = min(m_rows, n_cols)
    if g.attr("mode") == "r":
        q, r = g.tmp(x, lambda s: [*s[:-1], size]), g.tmp(dr)   # reduced Q: [..., M, K]
        f.emit("qr", {"X": x}, {"Q": q, "R": r}, {"mode": "reduced"})
        dq = f.fill_like(q, 0.0)
    else:
        q, r, dq = first(g.I("Q")), first(g.I("R")), first(g.I("Q@GRAD"))
    if size < 0:
        grad = _qr_any_size(f, x, q, r, dq, dr)
    elif m_rows >= n_cols:
        grad = _qr_tall(f, q, r, dq, dr)
    else:
        y, dv = f.slice(x, n - 1, m_rows, n_cols), f.slice(dr, n - 1, m_rows, n_cols)
        tall = _qr_tall(f, q, f.slice(r, n - 1, 0, m_rows), f.add(dq, mm(f, y, dv, tb=True, like=dq), dq),
                        f.slice(dr, n - 1, 0, m_rows))
        grad = f.op("concat", {"X": [tall, mm(f, q, dv)]}, x, {"axis": n - 1})
    return {"X@GRAD": f.add(grad, f.scale(x, 0.0), x)}   # + 0 X: X@GRAD's grad is written (zeros) in every mode


def permutation(f: Formula, packed: str, pivots: str) -> str:
    """lu_unpack's Pmat, from a zero copy of the packed factors: it is a function of the (integer) pivots alone, so no
    gradient reaches lu_unpack through it (a third backward would find it on the path from X otherwise)."""
    zeros = f.fill_like(packed, 0.0)
    return f.op("lu_unpack", {"X": zeros, "Pivots": pivots}, packed, {"unpack_ludata": False}, slot="Pmat",
                more={"L": f.g.tmp(packed, lambda s: [0]), "U": f.g.tmp(packed, lambda s: [0])},
                dims=lambda s: [*s[:-1], s[-2]])


def _lu_any_size(f: Formula, x: str, low: str, up: str, dout: str) -> str:
    """The kernel's formula unpermuted, M and N known at run time only: the square part's rows (columns) chosen by
    [M, K] and [N, K] selections, the rows below (columns right of) it by their rests, each zero where it is empty."""
    rows, columns = selection(f, low), selection(f, mt(f, up))
    dlow = mm(f, triangle(f, dout, False, -1), columns, like=low)
    dup = mm(f, rows, triangle(f, dout, True), ta=True, like=up)
    low1, dlow1 = mm(f, rows, low, ta=True), mm(f, rows, dlow, ta=True)
    up1, dup1 = mm(f, up, columns), mm(f, dup, columns)
    below = mm(f, mm(f, rest(f, rows), dlow), inverse(f, up1), tb=True, like=low)   # dL2 U^-T, zero above
    right = mm(f, inverse(f, low1), mm(f, dup, rest(f, columns)), ta=True, like=up)   # L^-T dU2, zero at the left
    dup1 = f.sub(dup1, mm(f, low, below, ta=True, like=dup1), dup1)
    dlow1 = f.sub(dlow1, triangle(f, mm(f, right, up, tb=True, like=dlow1), False, -1), dlow1)
    middle = f.add(triangle(f, mm(f, low1, dlow1, ta=True), False, -1), triangle(f, mm(f, dup1, up1, tb=True), True),
                   low1)
    square = mm(f, mm(f, inverse(f, low1), middle, ta=True), inverse(f, up1), tb=True)
    placed = f.add(mm(f, mm(f, rows, square), columns, tb=True, like=x), mm(f, below, columns, tb=True, like=x), x)
    return f.add(placed, mm(f, rows, right, like=x), x)


@expansion
def _lu_grad(f, g):
    """As the kernel, with P, L, U unpacked from Out and Pivots: P L^-T (tril(L^T dL, -1) + triu(dU U^T)) U^-T for the
    square part; M > N adds the rows below (dL2 U^-T, and -L2^T dL2 U^-T to dU), M < N the columns right of it
    (L^-T dU2, and -L^-T dU2 U2^T to dL)."""
    x, out, pivots, dout = (first(g.I(slot)) for slot in ("X", "Out", "Pivots", "Out@GRAD"))
    n, m_rows, n_cols = matrix_size(f, x)
    size = min(m_rows, n_cols)
    up = g.tmp(x, lambda s: [*s[:-2], size, s[-1]])
    low = f.op("lu_unpack", {"X": out, "Pivots": pivots}, x, {"unpack_pivots": False}, slot="L",
               more={"Pmat": g.tmp(x, lambda s: [0]), "U": up}, dims=lambda s: [*s[:-1], size])
    pmat = permutation(f, out, pivots)
    if size < 0:
        return {"X@GRAD": f.add(mm(f, pmat, _lu_any_size(f, x, low, up, dout)), f.scale(x, 0.0), x)}
    dlow = f.slice(triangle(f, dout, False, -1), n - 1, 0, size)
    dup = f.slice(triangle(f, dout, True), n - 2, 0, size)
    low1, dlow1 = f.slice(low, n - 2, 0, size), f.slice(dlow, n - 2, 0, size)
    up1, dup1 = f.slice(up, n - 1, 0, size), f.slice(dup, n - 1, 0, size)
    if m_rows > n_cols:
        low2, dlow2 = f.slice(low, n - 2, size, m_rows), f.slice(dlow, n - 2, size, m_rows)
        extra = mm(f, dlow2, inverse(f, up1), tb=True)
        dup1 = f.sub(dup1, mm(f, low2, extra, ta=True), dup1)
    elif m_rows < n_cols:
        up2, dup2 = f.slice(up, n - 1, size, n_cols), f.slice(dup, n - 1, size, n_cols)
        extra = mm(f, inverse(f, low1), dup2, ta=True)
        dlow1 = f.sub(dlow1, triangle(f, mm(f, extra, up2, tb=True), False, -1), dlow1)
    middle = f.add(triangle(f, mm(f, low1, dlow1, ta=True), False, -1), triangle(f, mm(f, dup1, up1, tb=True), True),
                   low1)
    unpermuted = mm(f, mm(f, inverse(f, low1), middle, ta=True), inverse(f, up1), tb=True)
    if m_rows != n_cols:
        unpermuted = f.op("concat", {"X": [unpermuted, extra]}, x, {"axis": n - 2 if m_rows > n_cols else n - 1})
    return {"X@GRAD": f.add(mm(f, pmat, unpermuted), f.scale(x, 0.0), x)}   # + 0 X: X@GRAD's grad is written


@expansion
def _lu_unpack_grad(f, g):
    """L's grad below the diagonal and U's on and above it, put back in X's [..., M, N] (zeros elsewhere)."""
    x, dlow, dup = first(g.I("X")), first(g.I("L@GRAD")), first(g.I("U@GRAD"))
    n, m_rows, n_cols = matrix_size(f, x)
    low, up = triangle(f, dlow, False, -1), triangle(f, dup, True)
    if min(m_rows, n_cols) < 0:   # L [M, K] and U [K, N] placed by selections (sizes or rank known at run time)
        placed = mm(f, low, selection(f, mt(f, up)), tb=True, like=x)
        return {"X@GRAD": f.add(placed, mm(f, selection(f, low), up, like=x), x)}
    if m_rows > n_cols:   # U is N x N: rows of zeros below it
        zeros = f.scale(f.slice(low, n - 2, n_cols, m_rows), 0.0)
        up = f.op("concat", {"X": [up, zeros]}, x, {"axis": n - 2})
    elif m_rows < n_cols:   # L is M x M: columns of zeros right of it
        zeros = f.scale(f.slice(up, n - 1, m_rows, n_cols), 0.0)
        low = f.op("concat", {"X": [low, zeros]}, x, {"axis": n - 1})
    return {"X@GRAD": f.add(low, up, x)}


defgrad("lu_grad", grad=_lu_grad)
defgrad("lu_unpack_grad", grad=_lu_unpack_grad, no_grad_inputs=["X", "L", "U", "Pmat"])   # read for shapes only
defgrad("eigh_grad", grad=_eigh_grad)
defgrad("svd_grad", grad=_svd_grad, no_grad_inputs=["X"])   # the kernel reads X's dtype only
defgrad("qr_grad", grad=_qr_grad)
