"""More of paddle.linalg over the last two dims of a batch of matrices: eig and eigvals (complex results), eigvalsh,
matrix_rank (tolerance as an attribute or a tensor) and matrix_rank_atol_rtol, lu_solve, svdvals; and
paddle.tril_indices / triu_indices. Second derivatives are in linalg_extra_double.

eig's gradient (its outputs complex, Paddle's convention: z@GRAD = dL/dRe + i dL/dIm) is for losses that do not
depend on the eigenvectors' phases (each column is unit-norm, its phase LAPACK's choice), as every loss of
eigenvectors should: abs, V diag(w) V^-1, ...

eig, eigvals, eigvalsh and matrix_rank(_atol_rtol) take complex matrices too (gradc.ops.complex_inputs), as Paddle's
kernels do; their backward refuses them (gradc.backward.path). eigvalsh of a complex matrix has real eigenvalues.
"""

from __future__ import annotations

from ..ir import COMPLEX_DTYPES, EMPTY_VAR, VarType, dtype_name, real_dtype
from ..makers import GradOp
from ..registry import NO_GRAD, defop, grad_op
from ..shapes import broadcast_dims, dims_match
from . import linalg
from .complex_fft import COMPLEX_OF
from .infer import check_choice

LU_SOLVE_TRANS = ("N", "T", "C")
KERNEL_DTYPES = frozenset({VarType.FP32, VarType.FP64, *COMPLEX_DTYPES})


def matrices(ctx, slot: str, square: bool = False) -> list[int]:
    """gradc.ops.linalg.matrices of a dtype Paddle's kernels have (float32, float64, complex): eigenvalues of an
    integer or float16 dtype would lose their fractions or imaginary parts."""
    dtype = ctx.dtype(slot)
    if dtype is not None and dtype not in KERNEL_DTYPES:
        ctx.fail(f"{slot} must hold float32, float64 or complex matrices, not {dtype_name(dtype)}")
    return linalg.matrices(ctx, slot, square)


def _eig(ctx):
    """Eigenvalues [..., N] and Eigenvectors [..., N, N] (columns), complex of X's real dtype."""
    *batch, n, _ = matrices(ctx, "X", square=True)
    dtype = COMPLEX_OF.get(ctx.dtype("X"), ctx.dtype("X"))
    return {"Eigenvalues": ([*batch, n], dtype), "Eigenvectors": ([*batch, n, n], dtype)}


def _eigvals(ctx):
    *batch, n, _ = matrices(ctx, "X", square=True)
    return {"Out": ([*batch, n], COMPLEX_OF.get(ctx.dtype("X"), ctx.dtype("X")))}


def _eigvalsh(ctx):
    """Eigenvalues [..., N] ascending, from the UPLO triangle of X; the Eigenvectors [..., N, N] their grad reads."""
    *batch, n, _ = matrices(ctx, "X", square=True)
    check_choice(ctx, "UPLO", ("L", "U"))
    return {"Eigenvalues": ([*batch, n], real_dtype(ctx.dtype("X"))), "Eigenvectors": ([*batch, n, n], ctx.dtype("X"))}


class _EigvalshGrad(GradOp):
    """Paddle's eigvalsh_grad, which reads Eigenvalues@GRAD only; when Eigenvectors has a gradient too (a second
    derivative reaches it through eigvalsh_grad, which reads them), eigh_grad takes both."""

    def __call__(self, g):
        if not g.wants(g.O("Eigenvectors")[0]) or g.IG("X") == [EMPTY_VAR]:
            return super().__call__(g)
        slots = ("Eigenvalues", "Eigenvectors")
        return [g.op("eigh_grad", {**{s: g.O(s) for s in slots}, **{f"{s}@GRAD": g.OG(s) for s in slots}},
                     {"X@GRAD": g.IG("X")}, {"UPLO": g.attr("UPLO")})]


def _tolerance(ctx, slot: str, batch: list[int]) -> list[int]:
    """The batch dims broadcast with a tolerance tensor's (Paddle's ranks take the broadcast shape: one matrix
    against tolerances [2, 2] gives [2, 2] ranks)."""
    shape = ctx.shape(slot)
    if shape is None:
        return batch
    problem = f"{slot} {shape} does not broadcast against the matrices' batch dims {batch}"
    return broadcast_dims(batch, shape, -1, lambda why: ctx.fail(f"{problem}: {why}"))


def _ranks(ctx, x: str, out: str, tolerances: tuple[str, ...]):
    """out: the rank of each matrix of x, broadcast against the tolerance tensors. The kernel writes int64, as
    Paddle's, whatever the var declares: int32 in legacy programs (gradc's declaration too), float32 in PIR ones, each
    left as it is."""
    batch = matrices(ctx, x, square=ctx.attr("hermitian"))[:-2]
    for slot in tolerances:
        if ctx.has(slot):
            batch = _tolerance(ctx, slot, batch)
    declared = ctx.block.find_var(ctx.op.output(out)[0]) if ctx.op.output(out) else None
    dtype = declared.dtype if declared is not None and declared.dtype is not None else VarType.INT32
    return {out: (batch, dtype)}


def _lu_solve(ctx):
    """out [..., N, K] solves A out = b (trans 'N') or A^T out = b ('T', 'C'), A = P L U packed in lu as lu writes it,
    pivots [..., N] its 1-based row swaps; b, lu and pivots have the same batch dims (the Python API expands them)."""
    check_choice(ctx, "trans", LU_SOLVE_TRANS)
    lu, b, pivots = matrices(ctx, "lu", square=True), matrices(ctx, "b"), ctx.shape("pivots")
    if not dims_match(lu[-1], b[-2]):
        ctx.fail(f"lu is {lu[-2]} x {lu[-1]} but b has {b[-2]} rows")
    if len(b) != len(lu) or not all(map(dims_match, b[:-2], lu[:-2])):
        ctx.fail(f"b {b} and lu {lu} must have the same batch dims")
    if pivots is not None and (len(pivots) != len(lu) - 1 or not all(map(dims_match, pivots, lu[:-1]))):
        ctx.fail(f"pivots must hold the {lu[-1]} row swaps of each of lu's matrices {lu}, got shape {pivots}")
    if ctx.dtype("pivots") not in (None, VarType.INT32, VarType.INT64):
        ctx.fail(f"pivots must hold integer row numbers (int32, as lu writes them), not dtype {ctx.dtype('pivots')}")
    return {"out": (b, ctx.dtype("b"))}


def _svdvals(ctx):
    """s [..., min(M, N)], descending."""
    *batch, m, n = matrices(ctx, "x")
    return {"s": ([*batch, -1 if m < 0 or n < 0 else min(m, n)], ctx.dtype("x"))}


def triangle_count(rows: int, cols: int, offset: int, lower: bool) -> int:
    """The number of (row, col) pairs of a rows x cols matrix with col - row <= offset (lower) or >= offset, in
    closed form (rows and cols reach 2**31): the upper count is what the lower one below offset leaves."""
    if not lower:
        return rows * cols - triangle_count(rows, cols, offset - 1, True)
    shift = offset + 1                                    # row r holds clamp(r + shift, 0, cols) pairs
    first = min(max(-shift + 1, 0), rows)                 # the first row that is not empty
    full = min(max(cols - shift, first), rows)            # the first row that is full
    partial = full - first
    return partial * shift + (first + full - 1) * partial // 2 + (rows - full) * cols


def _indices(lower: bool, rows: str, cols: str):
    def infer(ctx):
        size = {name: ctx.attr(name) for name in (rows, cols)}
        if min(size.values()) < 0:
            ctx.fail(f"{rows} and {cols} must be >= 0, got {size[rows]} and {size[cols]}")
        if ctx.attr("dtype") not in (VarType.INT32, VarType.INT64):
            ctx.fail(f"dtype {ctx.attr('dtype')} must be int32 (2) or int64 (3)")
        return {"out": ([2, triangle_count(size[rows], size[cols], ctx.attr("offset"), lower)], ctx.attr("dtype"))}
    return infer


# dX = V^-H (diag(dw) + (V^H dV - V^H V diag(Re(V^H dV))) / conj(w_j - w_i)) V^H, its real part
defop("eig", ["X"], ["Eigenvalues", "Eigenvectors"], infer=_eig, grad=grad_op("Eigenvalues", "Eigenvectors"))
defop("eigvals", ["X"], infer=_eigvals, grad=NO_GRAD)
# dX = V diag(dw) V^T onto the UPLO triangle of X (Paddle 3.3.1 gives the symmetric matrix itself, and wrong values
# for a batch of matrices)
defop("eigvalsh", ["X"], ["Eigenvalues", "Eigenvectors"], attrs={"UPLO": "L", "is_test": False}, infer=_eigvalsh,
      grad=_EigvalshGrad(("Eigenvectors",)), no_grad_outputs=["Eigenvectors"])
defop("matrix_rank", ["X", "TolTensor?"], attrs={"tol": 0.0, "use_default_tol": True, "hermitian": False},
      infer=lambda ctx: _ranks(ctx, "X", "Out", ("TolTensor",)), grad=NO_GRAD, kernel_dtype_outputs=["Out"])
defop("matrix_rank_atol_rtol", ["x", "atol", "rtol?"], ["out"], attrs={"hermitian": False},
      infer=lambda ctx: _ranks(ctx, "x", "out", ("atol", "rtol")), grad=NO_GRAD, kernel_dtype_outputs=["out"])
# db = A^-T dout (A^-1 for trans); dA = -db out^T (-out db^T for trans), onto lu's L (below the diagonal) and U
# (Paddle 3.3.1's lu grad is wrong for trans 'T')
defop("lu_solve", ["b", "lu", "pivots"], ["out"], attrs={"trans": "N"}, infer=_lu_solve,
      grad=grad_op("b", "lu", "out", "pivots"), no_grad_inputs=["pivots"])
defop("svdvals", ["x"], ["s"], infer=_svdvals, grad=grad_op("x"))   # dx = U diag(ds) V^T
defop("tril_indices", [], ["out"], attrs={"rows": 0, "cols": 0, "offset": 0, "dtype": 3},
      infer=_indices(True, "rows", "cols"), grad=NO_GRAD)
defop("triu_indices", [], ["out"], attrs={"row": 0, "col": 0, "offset": 0, "dtype": 3},
      infer=_indices(False, "row", "col"), grad=NO_GRAD)
