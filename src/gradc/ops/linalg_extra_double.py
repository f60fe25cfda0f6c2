"""Second derivatives of gradc.ops.linalg_extra: svdvals_grad, lu_solve_grad, eigvalsh_grad and eig_grad recomputed
with differentiable ops (svd, lu_solve, lu_unpack, matmul_v2; gradc.ops.composite), so every order follows.

eig_grad's formula is written with the complex ops gradc differentiates (matmul_v2, the elementwise ops, conj, real,
imag, complex; gradc.backward.path) and V^-H as the real block inverse [[P, -Q], [Q, P]]^-1 of V^H = P + iQ (gradc has
no complex inverse); its third derivative follows, elementwise_div_grad being differentiated on complex values too.
"""

from __future__ import annotations

from ..ir import real_dtype
from ..registry import defgrad
from . import linalg_extra  # noqa: F401  (registers the grad ops)
from .composite import expansion, first
from .linalg_decomp_double import permutation
from .linalg_double import identity, mm, mt, onto_triangle, rank, triangle, unsqueezed


@expansion
def _svdvals_grad(f, g):
    """U diag(ds) V^T, U and V from x's reduced SVD."""
    x, ds = first(g.I("x")), first(g.I("s@GRAD"))
    shape = g.shape(x) or [-1, -1]   # of an unknown rank U and VH are declared so too
    size = min(shape[-2:]) if min(shape[-2:]) >= 0 else -1   # the formula needs it only to declare U and VH
    u, s = g.tmp(x, lambda shape: [*shape[:-1], size]), g.tmp(ds)
    vh = f.op("svd", {"X": x}, x, {"full_matrices": False}, slot="VH", more={"U": u, "S": s},
              dims=lambda shape: [*shape[:-2], size, shape[-1]])
    return {"x@GRAD": mm(f, f.mul(u, unsqueezed(f, ds, -2), u), vh, like=x)}


@expansion
def _lu_solve_grad(f, g):
    """db = lu_solve(dout) with the other trans; dA = -db out^T (-out db^T); dL = tril(P^T dA U^T, -1) and
    dU = triu(L^T P^T dA), with P, L, U unpacked from lu and pivots."""
    b, lu, pivots, out, dout = (first(g.I(slot)) for slot in ("b", "lu", "pivots", "out", "out@GRAD"))
    transposed = g.attr("trans") != "N"
    db = f.op("lu_solve", {"b": dout, "lu": lu, "pivots": pivots}, b, {"trans": "N" if transposed else "T"},
              slot="out")
    da = f.scale(mm(f, out, db, tb=True, like=lu) if transposed else mm(f, db, out, tb=True, like=lu), -1.0)
    up, pmat = g.tmp(lu), permutation(f, lu, pivots)
    low = f.op("lu_unpack", {"X": lu, "Pivots": pivots}, lu, {"unpack_ludata": True, "unpack_pivots": False},
               slot="L", more={"Pmat": g.tmp(lu, lambda s: [0]), "U": up})
    permuted = mm(f, pmat, da, ta=True)
    below = triangle(f, mm(f, permuted, up, tb=True), False, -1)
    return {"b@GRAD": db, "lu@GRAD": f.add(below, triangle(f, mm(f, low, permuted, ta=True), True), lu)}


def _part(f, kind: str, z: str) -> str:
    """real or imag of the complex ``z``."""
    return f.op(kind, {"X": z}, z, dtype=real_dtype(f.g.block.find_var(z).dtype))


def _complex(f, re: str, im: str | None, like: str) -> str:
    """re + i im (im None: 0), declared like the complex ``like``."""
    return f.op("complex", {"X": re, "Y": im or f.fill_like(re, 0.0)}, like,
                dims=lambda _: f.g.shape(re))


def _inner(f, values: str, vectors: str, adjoint: str, dvalues: str | None, dvectors: str | None, eye: str) -> str:
    """diag(dw) + (V^H dV - V^H V diag(Re(V^H dV))) / conj(w_j - w_i), off the diagonal (complex)."""
    n = rank(f, vectors)
    unit = _complex(f, eye, None, vectors)
    inner = None
    if dvectors is not None:
        projected = mm(f, adjoint, dvectors)
        norms = f.op("reduce_sum", {"X": f.mul(_part(f, "real", projected), eye, eye)}, eye,
                     {"dim": [n - 2], "keep_dim": True, "reduce_all": False}, dims=lambda s: [*s[:-2], 1, s[-1]])
        kept = f.sub(projected, f.mul(mm(f, adjoint, vectors), _complex(f, norms, None, vectors), vectors), vectors)
        row, column = unsqueezed(f, values, n - 2), unsqueezed(f, values, n - 1)
        gaps = f.add(f.unary("conj", f.sub(row, column, vectors)), unit, vectors)
        divided = f.div(kept, gaps, vectors)
        inner = f.sub(divided, f.mul(divided, unit, vectors), vectors)
    if dvalues is not None:
        diagonal = f.mul(unit, unsqueezed(f, dvalues, n - 2), vectors)
        inner = diagonal if inner is None else f.add(inner, diagonal, vectors)
    return inner


def _total(sizes) -> int:
    sizes = list(sizes)
    return sum(sizes) if min(sizes) >= 0 else -1


def _halves(f, x: str, axis: int) -> list[str]:
    """``x`` split in two along ``axis`` (>= 0), whatever its size."""
    halves = [f.g.tmp(x, lambda s: [d // 2 if i == axis and d >= 0 else d for i, d in enumerate(s)]) for _ in range(2)]
    f.emit("split", {"X": x}, {"Out": halves}, {"axis": axis, "num": 2, "sections": []})
    return halves


@expansion
def _eig_grad(f, g):
    """Re(V^-H inner V^H), V^-H = R + iS from the real inverse [[R, -S], [S, R]] of [[P, -Q], [Q, P]], V^H = P + iQ:
    R Re(inner V^H) - S Im(inner V^H). Eigenvalues must be distinct (the kernel's 0 / 0 = 0 is not differentiable)."""
    values, vectors = first(g.I("Eigenvalues")), first(g.I("Eigenvectors"))
    dvalues, dvectors = first(g.I("Eigenvalues@GRAD")), first(g.I("Eigenvectors@GRAD"))
    n = rank(f, vectors)
    adjoint = f.unary("conj", mt(f, vectors))
    p, q = _part(f, "real", adjoint), _part(f, "imag", adjoint)
    eye = identity(f, p)
    if dvalues is None and dvectors is None:
        return {"X@GRAD": f.scale(p, 0.0)}
    right = mm(f, _inner(f, values, vectors, adjoint, dvalues, dvectors, eye), adjoint)

    def joined(parts, axis):
        return f.op("concat", {"X": parts}, parts[0], {"axis": axis},
                    dims=lambda s: [*s[:axis], _total(f.g.shape(v)[axis] for v in parts), *s[axis + 1:]])

    real_block = joined([joined([p, f.scale(q, -1.0)], n - 1), joined([q, p], n - 1)], n - 2)
    inverted = f.op("inverse", {"Input": real_block}, real_block, slot="Output")
    left = _halves(f, inverted, n - 1)[0]
    r, s = _halves(f, left, n - 2)
    return {"X@GRAD": f.sub(mm(f, r, _part(f, "real", right)), mm(f, s, _part(f, "imag", right)), p)}


@expansion
def _eigvalsh_grad(f, g):
    """V diag(dw) V^T onto the UPLO triangle: its grad of V reaches eigvalsh, whose maker then emits eigh_grad."""
    vectors, dvalues = first(g.I("Eigenvectors")), first(g.I("Eigenvalues@GRAD"))
    scaled = f.mul(vectors, unsqueezed(f, dvalues, -2), vectors)
    return {"X@GRAD": onto_triangle(f, mm(f, scaled, vectors, tb=True), g.attr("UPLO") == "U")}


defgrad("svdvals_grad", grad=_svdvals_grad)
defgrad("lu_solve_grad", grad=_lu_solve_grad, no_grad_inputs=["pivots"])
defgrad("eig_grad", grad=_eig_grad)
defgrad("eigvalsh_grad", grad=_eigvalsh_grad)
