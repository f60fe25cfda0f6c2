"""Second derivatives of gradc.ops.linalg: each grad op's maker recomputes its gradient with differentiable ops
(matmul_v2, inverse, the solves, tril_triu; gradc.ops.composite), so every order follows. The helpers here are
shared with linalg_decomp_double."""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad
from . import linalg  # noqa: F401  (registers the grad ops)
from .composite import Formula, expansion, first


def rank(f: Formula, x: str) -> int:
    shape = f.g.shape(x)
    if shape is None:
        raise GradError(f"{f.g.fwd.type}: the rank of '{x}' must be known to differentiate it")
    return len(shape)


def mt(f: Formula, x: str) -> str:
    """The transposes of a batch of matrices."""
    n = rank(f, x)
    perm = [*range(n - 2), n - 1, n - 2]
    return f.op("transpose2", {"X": x}, x, {"axis": perm}, more={"XShape": f.xshape(x)},
                dims=lambda s: [s[i] for i in perm])


def mm(f: Formula, a: str, b: str, ta: bool = False, tb: bool = False, like: str | None = None) -> str:
    """a @ b (a^T, b^T with ``ta``, ``tb``), declared like ``like``, else [..., rows of a, columns of b]."""
    def dims(shape_a):
        shape_b = f.g.shape(b)
        rows = shape_a[-1] if ta else shape_a[-2]
        columns = (shape_b[-2] if tb else shape_b[-1]) if shape_b else -1
        return [*shape_a[:-2], rows, columns]
    return f.op("matmul_v2", {"X": a, "Y": b}, like or a, {"trans_x": ta, "trans_y": tb},
                dims=None if like else dims)


def triangle(f: Formula, x: str, upper: bool, diagonal: int = 0) -> str:
    return f.op("tril_triu", {"X": x}, x, {"diagonal": diagonal, "lower": not upper})


def inverse(f: Formula, x: str) -> str:
    return f.op("inverse", {"Input": x}, x, slot="Output")


def identity(f: Formula, like: str) -> str:
    """The identity matrix of the size of ``like``'s matrices, in its dtype (broadcast over a batch)."""
    shape, var = f.g.shape(like), f.g.block.find_var(like) if f.g.block is not None else None
    if shape is None or shape[-1] < 0:
        raise GradError(f"{f.g.fwd.type}: the matrix size of '{like}' must be known to differentiate it")
    dtype = int(var.dtype) if var is not None and var.dtype is not None else 5
    return f.op("eye", {}, like, {"num_rows": shape[-1], "num_columns": shape[-1], "dtype": dtype},
                dims=lambda s: [s[-1], s[-1]])


def diagonal_part(f: Formula, x: str) -> str:
    """x with everything off the diagonal zeroed."""
    return f.mul(x, identity(f, x), x)


def onto_triangle(f: Formula, sym: str, upper: bool) -> str:
    """The gradient on the triangle an op reads a symmetric matrix from: twice ``sym`` off the diagonal."""
    return f.add(f.scale(triangle(f, sym, upper, 1 if upper else -1), 2.0), diagonal_part(f, sym), sym)


def same_batch(f: Formula, *names: str) -> None:
    """The solves' grads sum broadcast batch dims back; their second derivatives take unbroadcast batches."""
    shapes = [f.g.shape(n) for n in names]
    if any(s is None for s in shapes) or len({len(s) for s in shapes}) > 1 or len({tuple(s[:-2]) for s in shapes}) > 1:
        raise GradError(f"{f.g.fwd.type}: gradc differentiates it again only for inputs of one rank and batch "
                        f"shape, got {shapes}")


@expansion
def _inverse_grad(f, g):
    """-Out^T dOut Out^T."""
    out, dout = first(g.I("Output")), first(g.I("Output@GRAD"))
    return {"Input@GRAD": f.scale(mm(f, mm(f, out, dout, ta=True), out, tb=True), -1.0)}


@expansion
def _determinant_grad(f, g):
    """dOut det(A) A^-T (the kernel's cofactors, where A is invertible)."""
    a, dout = first(g.I("Input")), first(g.I("Out@GRAD"))
    scaled = f.mul(dout, f.op("determinant", {"Input": a}, dout), dout)
    return {"Input@GRAD": f.mul(mt(f, inverse(f, a)), scaled, a, axis=0)}


@expansion
def _slogdeterminant_grad(f, g):
    """dOut[1] A^-T."""
    a, dout = first(g.I("Input")), first(g.I("Out@GRAD"))
    dlog = f.op("slice", {"Input": dout}, dout, {"axes": [0], "starts": [1], "ends": [2], "infer_flags": [1],
                                                 "decrease_axis": [0]}, dims=lambda s: s[1:])
    return {"Input@GRAD": f.mul(mt(f, inverse(f, a)), dlog, a, axis=0)}


@expansion
def _cholesky_grad(f, g):
    """L^-T Phi(L^T dL) L^-1 symmetrised, onto X's triangle (Phi: the lower triangle, its diagonal halved)."""
    upper = g.attr("upper")
    low, dlow = first(g.I("Out")), first(g.I("Out@GRAD"))
    if upper:
        low, dlow = mt(f, low), mt(f, dlow)
    product = mm(f, low, dlow, ta=True)
    phi = f.add(triangle(f, product, False, -1), f.scale(diagonal_part(f, product), 0.5), product)
    inv = inverse(f, low)
    grad = mm(f, mm(f, inv, phi, ta=True), inv)
    return {"X@GRAD": onto_triangle(f, f.scale(f.add(grad, mt(f, grad), grad), 0.5), upper)}


@expansion
def _cholesky_solve_grad(f, g):
    """dX = cholesky_solve(dOut); dA = -dX Out^T; dY = tril((dA + dA^T) L) (upper: triu(U (dA + dA^T)))."""
    b, factor, out, dout = (first(g.I(s)) for s in ("X", "Y", "Out", "Out@GRAD"))
    same_batch(f, b, factor)
    upper = g.attr("upper")
    db = f.op("cholesky_solve", {"X": dout, "Y": factor}, b, {"upper": upper})
    da = f.scale(mm(f, db, out, tb=True, like=factor), -1.0)
    sym = f.add(da, mt(f, da), da)
    tri = triangle(f, factor, upper)
    return {"X@GRAD": db, "Y@GRAD": triangle(f, mm(f, tri, sym) if upper else mm(f, sym, tri), upper)}


@expansion
def _triangular_solve_grad(f, g):
    """dY = M^-T dOut (the solve with transpose flipped), dM = -dY Out^T, onto X's triangle."""
    x, y, out, dout = (first(g.I(s)) for s in ("X", "Y", "Out", "Out@GRAD"))
    same_batch(f, x, y)
    upper, transpose, unit = g.attr("upper"), g.attr("transpose"), g.attr("unitriangular")
    dy = f.op("triangular_solve", {"X": x, "Y": dout}, y,
              {"upper": upper, "transpose": not transpose, "unitriangular": unit})
    dm = f.scale(mm(f, dy, out, tb=True, like=x), -1.0)
    shift = (1 if upper else -1) if unit else 0
    return {"X@GRAD": triangle(f, mt(f, dm) if transpose else dm, upper, shift), "Y@GRAD": dy}


@expansion
def _solve_grad(f, g):
    """dY = X^-T dOut, dX = -dY Out^T."""
    x, y, out, dout = (first(g.I(s)) for s in ("X", "Y", "Out", "Out@GRAD"))
    same_batch(f, x, y)
    dy = f.op("solve", {"X": mt(f, x), "Y": dout}, y)
    return {"X@GRAD": f.scale(mm(f, dy, out, tb=True, like=x), -1.0), "Y@GRAD": dy}


@expansion
def _matrix_power_grad(f, g):
    """For Out = B^m: dB = sum over k < m of (B^k)^T dOut (B^(m-1-k))^T; for n < 0, B = X^-1, dX = -B^T dB B^T."""
    x, dout, n = first(g.I("X")), first(g.I("Out@GRAD")), g.attr("n")
    if n in (0, 1):   # zeros, or dOut itself: written as functions of both inputs, so each gets its (zero) grad
        zeros = f.scale(f.add(x, dout, x), 0.0)
        return {"X@GRAD": zeros if n == 0 else f.add(dout, zeros, x)}
    base = inverse(f, x) if n < 0 else x
    powers = [None, base]   # B^k, None for the identity
    while len(powers) < abs(n):
        powers.append(mm(f, powers[-1], base))
    terms = []
    for k in range(abs(n)):
        left, right = powers[k], powers[abs(n) - 1 - k]
        term = dout if left is None else mm(f, left, dout, ta=True)
        terms.append(term if right is None else mm(f, term, right, tb=True))
    dbase = terms[0] if len(terms) == 1 else f.op("sum", {"X": terms}, x)
    return {"X@GRAD": f.scale(mm(f, mm(f, base, dbase, ta=True), base, tb=True), -1.0) if n < 0 else dbase}


defgrad("inverse_grad", grad=_inverse_grad)
defgrad("determinant_grad", grad=_determinant_grad, no_grad_inputs=["Out"])   # the kernel reads Input only
defgrad("slogdeterminant_grad", grad=_slogdeterminant_grad, no_grad_inputs=["Out"])
defgrad("cholesky_grad", grad=_cholesky_grad)
# the kernels read these right-hand sides for their shapes only
defgrad("cholesky_solve_grad", grad=_cholesky_solve_grad, no_grad_inputs=["X"])
defgrad("triangular_solve_grad", grad=_triangular_solve_grad, no_grad_inputs=["Y"])
defgrad("solve_grad", grad=_solve_grad, no_grad_inputs=["Y"])
defgrad("matrix_power_grad", grad=_matrix_power_grad, no_grad_inputs=["Out"])
