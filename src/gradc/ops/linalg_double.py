"""Second derivatives of gradc.ops.linalg: each grad op's maker recomputes its gradient with differentiable ops
(matmul_v2, inverse, the solves, tril_triu; gradc.ops.composite), so every order follows. The helpers here are
shared with linalg_decomp_double."""

from __future__ import annotations

from ..errors import GradError
from ..ir import VarType
from ..registry import defgrad
from ..shapes import broadcast_dims
from .composite import Formula, expansion, first
from .linalg import holds_vectors  # importing it registers the grad ops
from .shape import unsqueeze_dims


def rank(f: Formula, x: str) -> int:
    shape = f.g.shape(x)
    if shape is None:
        raise GradError(f"{f.g.fwd.type}: the rank of '{x}' must be known to differentiate it")
    return len(shape)


def mt(f: Formula, x: str) -> str:
    """The transposes of a batch of matrices; of an unknown rank, x^T times the identity of x's rows (a diagonal of
    ones like x x^T), exact (one product by 1 and zeros added), as transpose2's perm needs the rank."""
    if f.g.shape(x) is None:
        rows = diagonal_part(f, f.fill_like(f.op("matmul_v2", {"X": x, "Y": x}, x, {"trans_y": True}), 1.0))
        return f.op("matmul_v2", {"X": x, "Y": rows}, x, {"trans_x": True})
    n = rank(f, x)
    perm = [*range(n - 2), n - 1, n - 2]
    return f.op("transpose2", {"X": x}, x, {"axis": perm}, more={"XShape": f.xshape(x)},
                dims=lambda s: [s[i] for i in perm])


def mm(f: Formula, a: str, b: str, ta: bool = False, tb: bool = False, like: str | None = None,
       shape: list[int] | None = None) -> str:
    """a @ b (a^T, b^T with ``ta``, ``tb``), declared like ``like``, with ``shape``, else [..., rows of a, columns
    of b] with a's batch dims."""
    def dims(shape_a):
        if shape is not None:
            return list(shape)
        shape_b = f.g.shape(b)
        rows = shape_a[-1] if ta else shape_a[-2]
        columns = (shape_b[-2] if tb else shape_b[-1]) if shape_b else -1
        return [*shape_a[:-2], rows, columns]
    return f.op("matmul_v2", {"X": a, "Y": b}, like or a, {"trans_x": ta, "trans_y": tb},
                dims=None if like else dims)


def unsqueezed(f: Formula, x: str, axis: int) -> str:
    """x with a dim of 1 inserted at ``axis`` (< 0 counts from the end, so that it needs no rank: -1 appends)."""
    return f.op("unsqueeze2", {"X": x}, x, {"axes": [axis]}, more={"XShape": f.xshape(x)},
                dims=lambda s: unsqueeze_dims(s, [axis]))


def triangle(f: Formula, x: str, upper: bool, diagonal: int = 0) -> str:
    return f.op("tril_triu", {"X": x}, x, {"diagonal": diagonal, "lower": not upper})


def inverse(f: Formula, x: str) -> str:
    return f.op("inverse", {"Input": x}, x, slot="Output")


def identity(f: Formula, like: str) -> str:
    """The identity matrix of the size of ``like``'s (square) matrices, in its dtype (broadcast over a batch); of a
    size known at run time only, the diagonal of ones like ``like`` (a batch of them)."""
    shape, var = f.g.shape(like), f.g.block.find_var(like) if f.g.block is not None else None
    if shape is None or shape[-1] < 0:
        return diagonal_part(f, f.fill_like(like, 1.0))
    dtype = int(var.dtype) if var is not None and var.dtype is not None else int(VarType.FP32)
    return f.op("eye", {}, like, {"num_rows": shape[-1], "num_columns": shape[-1], "dtype": dtype},
                dims=lambda s: [s[-1], s[-1]])


def diagonal_part(f: Formula, x: str) -> str:
    """x with everything off the diagonal zeroed."""
    return triangle(f, triangle(f, x, upper=True), upper=False)


def onto_triangle(f: Formula, sym: str, upper: bool) -> str:
    """The gradient on the triangle an op reads a symmetric matrix from: twice ``sym`` off the diagonal."""
    return f.add(f.scale(triangle(f, sym, upper, 1 if upper else -1), 2.0), diagonal_part(f, sym), sym)


def solve_batch(f: Formula, matrix: str, rhs: str, vectors: bool = False) -> tuple[list[int] | None, bool]:
    """The batch dims a solve broadcast ``matrix`` and ``rhs`` to (-1 where known at run time only; None where a rank
    is unknown), and whether ``rhs`` holds vectors (solve's rule when ``vectors``: rank 1, or the matrix's shape
    without its last dim; only asked where the declared shapes decide it, see _vectors_open)."""
    a, b = f.g.shape(matrix), f.g.shape(rhs)
    if a is None or b is None:
        return None, vectors and b is not None and len(b) == 1
    is_vector = vectors and holds_vectors(a, b)
    return broadcast_dims(a[:-2], b[:-1] if is_vector else b[:-2]), is_vector


def _vectors_open(f: Formula, matrix: str, rhs: str) -> bool:
    """Whether solve's rule (``rhs`` holds vectors) is left to the run by a rank or sizes unknown."""
    a, b = f.g.shape(matrix), f.g.shape(rhs)
    if b is not None and len(b) == 1:
        return False
    return a is None or b is None or holds_vectors(a, b) is None


def summed_back(f: Formula, grad: str, shape: list[int] | None, target: str) -> str:
    """``grad`` (of ``shape``) summed over the batch dims broadcasting ``target`` stretched: by reduce_as, which
    reads them at run time, where a dim is declared -1 or a rank is unknown (None)."""
    if shape is not None and f.g.shape(target) is not None and min(shape + f.g.shape(target), default=0) >= 0:
        return f.summed_to(grad, shape, target)
    return f.op("reduce_as", {"x": grad, "target": target}, target, slot="out")


@expansion
def _inverse_grad(f, g):
    """-Out^T dOut Out^T."""
    out, dout = first(g.I("Output")), first(g.I("Output@GRAD"))
    return {"Input@GRAD": f.scale(mm(f, mm(f, out, dout, ta=True), out, tb=True), -1.0)}


@expansion
def _determinant_grad(f, g):
    """dOut det(A) A^-T: the kernel's cofactors where A is invertible. At a singular A, where the kernel still gives
    the cofactors, this second derivative stops at run time ("inverse: Input holds a singular matrix"): the
    cofactors without an inverse would need an SVD, whose own derivative fails at repeated singular values."""
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


def _last(g, x: str) -> int:
    return (g.shape(x) or [-1])[-1]


def _batched(batch: list[int] | None, *dims: int) -> list[int] | None:
    return None if batch is None else [*batch, *dims]


def _unranked(g, *names: str) -> str | None:
    """One of ``names`` whose rank is unknown (the solves' temporaries are declared like it), or None."""
    return next((name for name in names if g.shape(name) is None), None)


@expansion
def _cholesky_solve_grad(f, g):
    """dX = cholesky_solve(dOut); dA = -dX Out^T; dY = tril((dA + dA^T) L) (upper: triu(U (dA + dA^T))); each summed
    back over the batch dims broadcasting stretched."""
    b, factor, out, dout = (first(g.I(s)) for s in ("X", "Y", "Out", "Out@GRAD"))
    batch, _ = solve_batch(f, factor, b)
    n, k, upper = _last(g, factor), _last(g, b), g.attr("upper")
    square, like = _batched(batch, n, n), _unranked(g, b, factor)
    db = f.op("cholesky_solve", {"X": dout, "Y": factor}, like or b, {"upper": upper},
              dims=lambda s: _batched(batch, n, k))
    da = f.scale(mm(f, db, out, tb=True, like=like, shape=square), -1.0)
    sym = f.add(da, mt(f, da), da)
    tri = triangle(f, factor, upper)
    product = mm(f, tri, sym, like=like, shape=square) if upper else mm(f, sym, tri, like=like, shape=square)
    return {"X@GRAD": summed_back(f, db, _batched(batch, n, k), b),
            "Y@GRAD": summed_back(f, triangle(f, product, upper), square, factor)}


@expansion
def _triangular_solve_grad(f, g):
    """dY = M^-T dOut (the solve with transpose flipped), dM = -dY Out^T onto X's triangle; each summed back over
    the batch dims broadcasting stretched."""
    x, y, out, dout = (first(g.I(s)) for s in ("X", "Y", "Out", "Out@GRAD"))
    batch, _ = solve_batch(f, x, y)
    n, k, like = _last(g, x), _last(g, y), _unranked(g, x, y)
    upper, transpose, unit = g.attr("upper"), g.attr("transpose"), g.attr("unitriangular")
    dy = f.op("triangular_solve", {"X": x, "Y": dout}, like or y,
              {"upper": upper, "transpose": not transpose, "unitriangular": unit}, dims=lambda s: _batched(batch, n, k))
    dm = f.scale(mm(f, dy, out, tb=True, like=like, shape=_batched(batch, n, n)), -1.0)
    shift = (1 if upper else -1) if unit else 0
    dx = triangle(f, mt(f, dm) if transpose else dm, upper, shift)
    return {"X@GRAD": summed_back(f, dx, _batched(batch, n, n), x),
            "Y@GRAD": summed_back(f, dy, _batched(batch, n, k), y)}


def _as_columns_at_run_time(f: Formula, x: str, values: list[str], like: str) -> list[str]:
    """``values`` (shaped like solve's Out) as batches of matrices, a dim of 1 appended where Out holds vectors:
    decided at run time by Out's rank being one less than X's (a matrix Out has at least X's rank). Declared like
    ``like`` with its dims -1 (of X's rank when known, which both readings then have)."""
    int32, unknown = int(VarType.INT32), (lambda s: [-1] * len(s))
    def ints(type, inputs, attrs=None, slot="Out", dtype=int32):
        return f.op(type, inputs, like, attrs, slot=slot, dims=lambda s: [-1], dtype=dtype)
    dims = ints("shape", {"Input": values[0]})
    vectors = ints("less_than", {"X": ints("shape", {"Input": dims}),
                                 "Y": ints("shape", {"Input": ints("shape", {"Input": x})})}, dtype=int(VarType.BOOL))
    one = ints("fill_constant", {}, {"shape": [1], "dtype": int32, "value": 1.0})
    shape = ints("concat", {"X": [dims, ints("masked_select", {"X": one, "Mask": vectors}, slot="Y")]}, {"axis": 0})
    return [f.op("reshape2", {"X": v, "Shape": shape}, like, more={"XShape": f.xshape(v)}, dims=unknown)
            for v in values]


@expansion
def _solve_grad(f, g):
    """dY = X^-T dOut, dX = -dY Out^T (vectors as columns), each summed back over the batch dims broadcasting
    stretched. Where ranks or sizes known at run time only leave open whether Y holds vectors, dY and Out are made
    matrices at run time (dY has Out's shape: solve applies Y's rule to dOut)."""
    x, y, out, dout = (first(g.I(s)) for s in ("X", "Y", "Out", "Out@GRAD"))
    if _vectors_open(f, x, y):
        like = _unranked(g, x, y) or x
        dy = f.op("solve", {"X": mt(f, x), "Y": dout}, dout)
        columns, rows = _as_columns_at_run_time(f, x, [dy, out], like)
        dx = f.scale(f.op("matmul_v2", {"X": columns, "Y": rows}, columns, {"trans_x": False, "trans_y": True}), -1.0)
        return {"X@GRAD": summed_back(f, dx, None, x), "Y@GRAD": summed_back(f, dy, None, y)}
    batch, vector = solve_batch(f, x, y, vectors=True)
    like = _unranked(g, x, y)   # temporaries of an unknown rank are declared like it
    if vector:
        out, dout = (unsqueezed(f, v, -1) for v in (out, dout))
    n, k = _last(g, x), 1 if vector else _last(g, y)
    dy = f.op("solve", {"X": mt(f, x), "Y": dout}, like or y, dims=lambda s: _batched(batch, n, k))
    dx = f.scale(mm(f, dy, out, tb=True, like=like, shape=_batched(batch, n, n)), -1.0)
    dy_shape = _batched(batch, n, k)
    if vector:   # Y [..., N]: dY without its column
        dy = f.op("squeeze2", {"X": dy}, dy, {"axes": [-1]}, more={"XShape": f.xshape(dy)}, dims=lambda s: s[:-1])
        dy_shape = _batched(batch, n)
    return {"X@GRAD": summed_back(f, dx, _batched(batch, n, n), x), "Y@GRAD": summed_back(f, dy, dy_shape, y)}


@expansion
def _matrix_power_grad(f, g):
    """For Out = B^m: dB = sum over k < m of (B^k)^T dOut (B^(m-1-k))^T; for n < 0, B = X^-1, dX = -B^T dB B^T."""
    x, dout, n = first(g.I("X")), first(g.I("Out@GRAD")), g.attr("n")
    if n in (0, 1):   # zeros, or dOut itself: flat in X (and for 0 in dOut), whose grads are zeros, not 0 * ddX
        for slot, value in (("X", x), ("Out@GRAD", dout))[: 2 if n == 0 else 1]:
            f.into(first(g.IG(slot)), "fill_any_like", {"X": value}, {"value": 0.0, "dtype": -1})
        return {"X@GRAD": f.fill_like(x, 0.0) if n == 0 else dout}
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
