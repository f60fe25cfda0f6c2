"""Linear algebra over the last two dims of a batch of matrices (paddle.linalg): inverses, determinants,
Cholesky factors, solves and matrix powers. The decompositions (qr, svd, eigh, lu, lu_unpack, lstsq) are in
linalg_decomp; second derivatives in linalg_double and linalg_decomp_double.

Kernels compute in float64 and give back the input's dtype. Ops that read one triangle of a square matrix
(cholesky, cholesky_solve's factor, triangular_solve, eigh) take their gradient with respect to the elements
they read: the other triangle gets zeros.
"""

from __future__ import annotations

from ..registry import defop, grad_op
from ..shapes import broadcast_dims, dims_match


def matrices(ctx, slot: str, square: bool = False) -> list[int]:
    """The shape of a batch of matrices in ``slot`` (rank >= 2); ``square``: its last two dims must match."""
    shape = ctx.shape(slot)
    if shape is None:
        ctx.fail(f"the shape of {slot} is unknown")
    if len(shape) < 2:
        ctx.fail(f"{slot} must be a matrix or a batch of matrices [..., M, N], not rank {len(shape)}")
    if square and not dims_match(shape[-2], shape[-1]):
        ctx.fail(f"{slot} must hold square matrices, not {shape[-2]} x {shape[-1]}")
    return shape


def square_like(slot: str, out: str = "Out"):
    """``out`` is shaped like ``slot``, a batch of square matrices."""
    return lambda ctx: {out: (matrices(ctx, slot, square=True), ctx.dtype(slot))}


def _determinant(ctx):
    """One determinant per matrix: the batch dims ([] for one matrix)."""
    return {"Out": (matrices(ctx, "Input", square=True)[:-2], ctx.dtype("Input"))}


def _slogdeterminant(ctx):
    """[sign, log|det|] stacked on a new leading dim: [2, *batch]. Paddle 3.3.1's legacy programs declare Out with
    Input's shape (its kernel writes [2, *batch] all the same): that declaration is left unchallenged."""
    matrix = matrices(ctx, "Input", square=True)
    declared = ctx.block.find_var(ctx.op.output("Out")[0]) if ctx.op.output("Out") else None
    if declared is not None and declared.shape == matrix:
        return {"Out": (None, ctx.dtype("Input"))}
    return {"Out": ([2, *matrix[:-2]], ctx.dtype("Input"))}


def holds_vectors(matrix, rhs) -> bool | None:
    """Whether solve's ``rhs`` holds vectors ([..., N]) for ``matrix`` [..., N, N]: Paddle's rule, rank 1 or the
    matrix's shape without its last dim. None when unknown dims (-1) leave it to the run (the kernel's shapes
    always decide it)."""
    if len(rhs) == 1:
        return True
    if len(rhs) != len(matrix) - 1 or not all(map(dims_match, rhs, matrix[:-1])):
        return False
    return True if min([*rhs, *matrix[:-1]]) >= 0 else None


def _solved(ctx, matrix: str, rhs: str, vectors: bool = False):
    """Out of a solve of ``matrix`` (square, [..., N, N]) against ``rhs`` ([..., N, K]), batch dims broadcast.
    ``vectors``: a rhs that ``holds_vectors`` gives Out [..., N]; unknown when the declared shapes do not decide."""
    a, b = matrices(ctx, matrix, square=True), ctx.shape(rhs)
    if b is None:
        ctx.fail(f"the shape of {rhs} is unknown")
    is_vector = vectors and holds_vectors(a, b)
    if is_vector is None:
        return {"Out": (None, ctx.dtype(matrix))}
    if not is_vector and len(b) < 2:
        ctx.fail(f"{rhs} must be a matrix or a batch of matrices [..., N, K], not rank {len(b)}")
    rows = b[-1] if is_vector else b[-2]
    if not dims_match(a[-1], rows):
        ctx.fail(f"{matrix} is {a[-2]} x {a[-1]} but {rhs} has {rows} rows")
    b_batch = b[:-1] if is_vector else b[:-2]
    batch = broadcast_dims(a[:-2], b_batch, -1, ctx.fail)
    return {"Out": (batch + ([a[-1]] if is_vector else [a[-1], b[-1]]), ctx.dtype(matrix))}


def _rhs_first(ctx):
    """cholesky_solve: X is the right-hand side [..., N, K], Y the Cholesky factor [..., N, N]."""
    return _solved(ctx, "Y", "X")


# dA = -Out^T dOut Out^T
defop("inverse", ["Input"], ["Output"], infer=square_like("Input", "Output"), grad=grad_op("Output"))
# dA = dOut adj(A)^T: the adjugate, so a singular matrix (det 0) gets its gradient too (Paddle 3.3.1 gives 0)
defop("determinant", ["Input"], infer=_determinant, grad=grad_op("Input", "Out"))
defop("slogdeterminant", ["Input"], infer=_slogdeterminant, grad=grad_op("Input", "Out"))   # dA = dlog|A| A^-T
# A = L L^T from the lower triangle of X (upper: A = U^T U from its upper triangle)
defop("cholesky", ["X"], attrs={"upper": False}, infer=square_like("X"), grad=grad_op("Out"))
defop("cholesky_solve", ["X", "Y"], attrs={"upper": False}, infer=_rhs_first, grad=grad_op("X", "Y", "Out"))
defop("triangular_solve", ["X", "Y"], attrs={"upper": True, "transpose": False, "unitriangular": False},
      infer=lambda ctx: _solved(ctx, "X", "Y"), grad=grad_op("X", "Y", "Out"))
defop("solve", ["X", "Y"], infer=lambda ctx: _solved(ctx, "X", "Y", vectors=True), grad=grad_op("X", "Y", "Out"))
# X^n; n < 0: inverse(X)^-n; n = 0: the identity
defop("matrix_power", ["X"], attrs={"n": 1}, infer=square_like("X"), grad=grad_op("X", "Out"))
