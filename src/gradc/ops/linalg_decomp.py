"""Decompositions of a batch of matrices (paddle.linalg): qr, svd, eigh, lu, and lstsq (no gradient in Paddle).
K below is min(M, N)."""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop, grad_op
from ..shapes import broadcast_dims, dims_match
from .infer import check_choice
from .linalg import matrices

QR_MODES = ("reduced", "complete", "r")
LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _smaller(m: int, n: int) -> int:
    return -1 if m < 0 or n < 0 else min(m, n)


def _qr(ctx):
    """reduced: Q [..., M, K], R [..., K, N]; complete: Q [..., M, M], R [..., M, N]; r: R only (Q is empty)."""
    x = matrices(ctx, "X")
    mode, (*batch, m, n) = check_choice(ctx, "mode", QR_MODES), x
    rows = m if mode == "complete" else _smaller(m, n)
    q = [0] if mode == "r" else [*batch, m, rows]
    return {"Q": (q, ctx.dtype("X")), "R": ([*batch, rows, n], ctx.dtype("X"))}


def _svd(ctx):
    """U [..., M, K], S [..., K], VH [..., K, N]; full_matrices: U [..., M, M], VH [..., N, N]."""
    *batch, m, n = matrices(ctx, "X")
    k, full = _smaller(m, n), ctx.attr("full_matrices")
    dtype = ctx.dtype("X")
    return {"U": ([*batch, m, m if full else k], dtype), "S": ([*batch, k], dtype),
            "VH": ([*batch, n if full else k, n], dtype)}


def _eigh(ctx):
    """Eigenvalues [..., N] in ascending order, Eigenvectors [..., N, N] (columns), from the UPLO triangle of X."""
    *batch, n, _ = matrices(ctx, "X", square=True)
    check_choice(ctx, "UPLO", ("L", "U"))
    return {"Eigenvalues": ([*batch, n], ctx.dtype("X")), "Eigenvectors": ([*batch, n, n], ctx.dtype("X"))}


def _lu(ctx):
    """Out: L (unit diagonal left out) and U packed like X; Pivots [..., K] int32, 1-based row swaps in order;
    Infos [...] int32: 0, or the 1-based index of U's first zero pivot."""
    *batch, m, n = matrices(ctx, "X")
    return {"Out": ([*batch, m, n], ctx.dtype("X")), "Pivots": ([*batch, _smaller(m, n)], VarType.INT32),
            "Infos": (batch, VarType.INT32)}


def _lu_unpack(ctx):
    """X packed as lu writes it, Pivots its row swaps: Pmat [..., M, M], L [..., M, K], U [..., K, N] with X = Pmat L U
    before packing; an output not unpacked (unpack_ludata: L and U, unpack_pivots: Pmat) is empty, as in Paddle."""
    *batch, m, n = matrices(ctx, "X")
    k, dtype = _smaller(m, n), ctx.dtype("X")
    swaps = ctx.shape("Pivots")
    if swaps is not None and (not swaps or not dims_match(swaps[-1], k)):
        ctx.fail(f"Pivots must hold the {k} row swaps of each of X's {m} x {n} matrices, got shape {swaps}")
    ludata, pivots = ctx.attr("unpack_ludata"), ctx.attr("unpack_pivots")
    return {"Pmat": ([*batch, m, m] if pivots else [0], dtype), "L": ([*batch, m, k] if ludata else [0], dtype),
            "U": ([*batch, k, n] if ludata else [0], dtype)}


def _lstsq(ctx):
    """Solution [..., N, K] of min |X Solution - Y|. Residuals [..., K] (squared norms) where M > N, the driver is
    not gelsy and X has full rank, else empty. Rank [...] int32 and SingularValues [..., min(M, N)] for every
    driver: Paddle 3.3.1's kernel leaves them unwritten for gels (and SingularValues for gelsy), and its Python
    API puts empty tensors in their place; gradc computes them."""
    x, y = matrices(ctx, "X"), matrices(ctx, "Y")
    driver = check_choice(ctx, "driver", LSTSQ_DRIVERS)
    if not dims_match(x[-2], y[-2]):
        ctx.fail(f"X has {x[-2]} rows but Y has {y[-2]}")
    batch, (m, n), dtype = broadcast_dims(x[:-2], y[:-2], -1, ctx.fail), x[-2:], ctx.dtype("X")
    if m < 0 or n < 0 or (m > n and driver in ("gelsd", "gelss")):   # known at run time (the rank) only
        residuals = None
    else:
        residuals = [*batch, y[-1]] if m > n and driver == "gels" else [0]
    return {"Solution": ([*batch, n, y[-1]], dtype), "Residuals": (residuals, dtype), "Rank": (batch, VarType.INT32),
            "SingularValues": ([*batch, _smaller(m, n)], dtype)}


defop("qr", ["X"], ["Q", "R"], attrs={"mode": "reduced"}, infer=_qr, grad=grad_op("X", "Q", "R"))
defop("svd", ["X"], ["U", "S", "VH"], attrs={"full_matrices": False}, infer=_svd, grad=grad_op("X", "U", "S", "VH"))
defop("eigh", ["X"], ["Eigenvalues", "Eigenvectors"], attrs={"UPLO": "L"}, infer=_eigh,
      grad=grad_op("Eigenvalues", "Eigenvectors"))
defop("lu", ["X"], ["Out", "Pivots", "Infos"], attrs={"pivots": True}, infer=_lu,
      grad=grad_op("X", "Out", "Pivots"), no_grad_outputs=["Pivots", "Infos"])
defop("lu_unpack", ["X", "Pivots"], ["Pmat", "L", "U"], attrs={"unpack_ludata": True, "unpack_pivots": True},
      infer=_lu_unpack, grad=grad_op("X", "Pivots", "L", "U", "Pmat"), no_grad_inputs=["Pivots"],
      no_grad_outputs=["Pmat"])
defop("lstsq", ["X", "Y"], ["Solution", "Residuals?", "Rank", "SingularValues"],
      attrs={"rcond": 0.0, "driver": "gels"}, infer=_lstsq, grad=NO_GRAD, tensor_attrs=["rcond"])
