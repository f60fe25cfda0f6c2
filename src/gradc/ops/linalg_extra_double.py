"""Second derivatives of gradc.ops.linalg_extra: svdvals_grad and lu_solve_grad recomputed with differentiable ops
(svd, lu_solve, lu_unpack, matmul_v2; gradc.ops.composite), so every order follows.

eig_grad and eigvalsh_grad refuse: eig_grad computes with complex matrices, and gradc differentiates complex values
only through the elementwise and reshaping ops of gradc.backward.path (no complex matmul or solve); eigvalsh_grad reads
the Eigenvectors eigvalsh writes but does not differentiate (Paddle's slots), so a formula of them would silently drop
how they move with X.
"""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad
from . import linalg_extra  # noqa: F401  (registers the grad ops)
from .composite import expansion, first
from .linalg_decomp_double import matrix_size
from .linalg_double import mm, onto_triangle, rank, triangle, unsqueezed


@expansion
def _svdvals_grad(f, g):
    """U diag(ds) V^T, U and V from x's reduced SVD."""
    x, ds = first(g.I("x")), first(g.I("s@GRAD"))
    n, m_rows, n_cols = matrix_size(f, x)
    size = min(m_rows, n_cols)
    u, s = g.tmp(x, lambda shape: [*shape[:-1], size]), g.tmp(ds)
    vh = f.op("svd", {"X": x}, x, {"full_matrices": False}, slot="VH", more={"U": u, "S": s},
              dims=lambda shape: [*shape[:-2], size, shape[-1]])
    return {"x@GRAD": mm(f, f.mul(u, unsqueezed(f, ds, n - 2), u), vh, like=x)}


@expansion
def _lu_solve_grad(f, g):
    """db = lu_solve(dout) with the other trans; dA = -db out^T (-out db^T); dL = tril(P^T dA U^T, -1) and
    dU = triu(L^T P^T dA), with P, L, U unpacked from lu and pivots."""
    b, lu, pivots, out, dout = (first(g.I(slot)) for slot in ("b", "lu", "pivots", "out", "out@GRAD"))
    transposed = g.attr("trans") != "N"
    db = f.op("lu_solve", {"b": dout, "lu": lu, "pivots": pivots}, b, {"trans": "N" if transposed else "T"},
              slot="out")
    da = f.scale(mm(f, out, db, tb=True, like=lu) if transposed else mm(f, db, out, tb=True, like=lu), -1.0)
    pmat, up = g.tmp(lu), g.tmp(lu)
    low = f.op("lu_unpack", {"X": lu, "Pivots": pivots}, lu, {"unpack_ludata": True, "unpack_pivots": True},
               slot="L", more={"Pmat": pmat, "U": up})
    permuted = mm(f, pmat, da, ta=True)
    below = triangle(f, mm(f, permuted, up, tb=True), False, -1)
    return {"b@GRAD": db, "lu@GRAD": f.add(below, triangle(f, mm(f, low, permuted, ta=True), True), lu)}


def _complex_matrices(g):
    raise GradError(f"{g.fwd.type}: gradc does not differentiate eig twice: eig_grad computes with complex "
                    f"matrices, and gradc's complex gradients pass only elementwise and reshaping ops (no complex "
                    f"matmul or solve)")


@expansion
def _eigvalsh_grad(f, g):
    """V diag(dw) V^T onto the UPLO triangle: its grad of V reaches eigvalsh, whose maker then emits eigh_grad."""
    vectors, dvalues = first(g.I("Eigenvectors")), first(g.I("Eigenvalues@GRAD"))
    scaled = f.mul(vectors, unsqueezed(f, dvalues, rank(f, dvalues) - 1), vectors)
    return {"X@GRAD": onto_triangle(f, mm(f, scaled, vectors, tb=True), g.attr("UPLO") == "U")}


defgrad("svdvals_grad", grad=_svdvals_grad)
defgrad("lu_solve_grad", grad=_lu_solve_grad, no_grad_inputs=["pivots"])
defgrad("eig_grad", grad=_complex_matrices)
defgrad("eigvalsh_grad", grad=_eigvalsh_grad)
