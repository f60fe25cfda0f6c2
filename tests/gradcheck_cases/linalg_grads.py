"""Cases for the linalg grad ops (second derivatives: gradc.ops.linalg_double, linalg_decomp_double) and lu_unpack.
A grad op is checked as a function of all its inputs, each perturbed alone, so they need not be consistent (an
Out need not be the forward's output); they are kept where the formulas are smooth: invertible matrices,
spectra without repeated values."""

import numpy as np

from gradc.executor.kernels.linalg_decomp import _lu_factor

from . import Case, rng

r = rng(13)


def randn(*shape):
    return r.standard_normal(shape)


def shifted(*shape):
    return randn(*shape) + 3 * np.eye(*shape[-2:])


def spread(*shape):
    """Increasing values at least 1 apart: eigenvalues or singular values without near ties (positive: + 3)."""
    return np.cumsum(1 + r.uniform(0, 1, shape), -1) + 3


def lu_of(x):
    packed, pivots, _ = _lu_factor(x.reshape(-1, *x.shape[-2:]), True)
    return packed.reshape(x.shape), pivots.reshape(*x.shape[:-2], -1)


def solve_inputs(b_cols=2, batch=(2,), matrix="X", rhs="Y"):
    """A solve's grad inputs: ``matrix`` square and invertible, ``rhs``, Out and its grad [..., 3, b_cols]."""
    return {matrix: shifted(*batch, 3, 3), rhs: randn(*batch, 3, b_cols), "Out": randn(*batch, 3, b_cols),
            "Out@GRAD": randn(*batch, 3, b_cols)}


def svd_inputs(m, n, full=False):
    k = min(m, n)
    u, vh = randn(m, m if full else k), randn(n if full else k, n)
    return {"X": randn(m, n), "U": u, "S": spread(k), "VH": vh, "U@GRAD": randn(*u.shape), "S@GRAD": randn(k),
            "VH@GRAD": randn(*vh.shape)}


def lu_unpack_inputs(*shape):
    packed, pivots = lu_of(randn(*shape))
    m, n = shape[-2:]
    k, batch = min(m, n), shape[:-2]
    return {"X": packed, "Pivots": pivots, "L": randn(*batch, m, k), "U": randn(*batch, k, n),
            "Pmat": randn(*batch, m, m), "L@GRAD": randn(*batch, m, k), "U@GRAD": randn(*batch, k, n)}


CASES = [
    Case("inverse_grad", {"Output": randn(2, 3, 3), "Output@GRAD": randn(2, 3, 3)}),
    Case("determinant_grad", {"Input": shifted(2, 3, 3), "Out": randn(2), "Out@GRAD": randn(2)}),
    Case("determinant_grad", {"Input": shifted(3, 3), "Out": randn(), "Out@GRAD": randn()}),
    Case("slogdeterminant_grad", {"Input": shifted(2, 3, 3), "Out": randn(2, 2), "Out@GRAD": randn(2, 2)}),
    Case("cholesky_grad", {"Out": np.tril(shifted(2, 3, 3)), "Out@GRAD": randn(2, 3, 3)}),
    Case("cholesky_grad", {"Out": np.triu(shifted(3, 3)), "Out@GRAD": randn(3, 3)}, {"upper": True}),
    Case("cholesky_solve_grad", solve_inputs(matrix="Y", rhs="X")),
    Case("cholesky_solve_grad", solve_inputs(4, (), matrix="Y", rhs="X"), {"upper": True}),
    Case("triangular_solve_grad", solve_inputs()),
    Case("triangular_solve_grad", solve_inputs(1, ()), {"upper": False, "transpose": True, "unitriangular": True}),
    Case("solve_grad", solve_inputs()),
    # vectors, and batch dims broadcast (the grads summed back)
    Case("solve_grad", {"X": shifted(2, 3, 3), "Y": randn(3), "Out": randn(2, 3), "Out@GRAD": randn(2, 3)}),
    Case("solve_grad", {"X": shifted(2, 3, 3), "Y": randn(2, 3), "Out": randn(2, 3), "Out@GRAD": randn(2, 3)}),
    Case("solve_grad", {"X": shifted(2, 1, 3, 3), "Y": randn(4, 3, 2), "Out": randn(2, 4, 3, 2),
                        "Out@GRAD": randn(2, 4, 3, 2)}),
    Case("cholesky_solve_grad", {"X": randn(3, 2), "Y": shifted(2, 3, 3), "Out": randn(2, 3, 2),
                                 "Out@GRAD": randn(2, 3, 2)}),
    Case("triangular_solve_grad", {"X": shifted(3, 3), "Y": randn(2, 3, 2), "Out": randn(2, 3, 2),
                                   "Out@GRAD": randn(2, 3, 2)}, {"transpose": True}),
    *[Case("matrix_power_grad", {"X": shifted(2, 3, 3) / 3, "Out": randn(2, 3, 3), "Out@GRAD": randn(2, 3, 3)},
           {"n": n}) for n in (0, 1, 3, -2)],
    Case("eigh_grad", {"Eigenvalues": spread(2, 3), "Eigenvectors": randn(2, 3, 3), "Eigenvalues@GRAD": randn(2, 3),
                       "Eigenvectors@GRAD": randn(2, 3, 3)}),
    Case("eigh_grad", {"Eigenvalues": spread(3), "Eigenvectors": randn(3, 3), "Eigenvalues@GRAD": randn(3),
                       "Eigenvectors@GRAD": randn(3, 3)}, {"UPLO": "U"}),
    Case("svd_grad", svd_inputs(4, 3)),
    Case("svd_grad", svd_inputs(3, 5)),
    Case("svd_grad", svd_inputs(4, 3, full=True), {"full_matrices": True}),
    Case("qr_grad", {"X": randn(2, 4, 3), "Q": randn(2, 4, 3), "R": np.triu(shifted(2, 3, 3)), "Q@GRAD": randn(2, 4, 3),
                     "R@GRAD": randn(2, 3, 3)}),
    Case("qr_grad", {"X": randn(3, 5), "Q": randn(3, 3), "R": np.triu(randn(3, 5) + 3 * np.eye(3, 5)),
                     "Q@GRAD": randn(3, 3), "R@GRAD": randn(3, 5)}),
    # mode 'r' factors X again: R and the empty Q it was given do not count
    Case("qr_grad", {"X": randn(4, 3), "Q": np.zeros(0), "R": randn(3, 3), "Q@GRAD": np.zeros(0),
                     "R@GRAD": randn(3, 3)}, {"mode": "r"}, wrt=["X", "R@GRAD"]),
    Case("qr_grad", {"X": randn(3, 5), "Q": np.zeros(0), "R": randn(3, 5), "Q@GRAD": np.zeros(0),
                     "R@GRAD": randn(3, 5)}, {"mode": "r"}, wrt=["X", "R@GRAD"]),   # a wide X: Q is [3, 3]
    *[Case("lu_grad", {"X": x, **dict(zip(("Out", "Pivots"), lu_of(x))), "Out@GRAD": randn(*x.shape)})
      for x in (randn(2, 3, 3), randn(4, 3), randn(2, 3, 5))],
    *[Case("lu_unpack", dict(zip(("X", "Pivots"), lu_of(randn(*shape)))), outputs={"Pmat": 1, "L": 1, "U": 1})
      for shape in ((2, 4, 3), (3, 5), (3, 3))],
    *[Case("lu_unpack_grad", lu_unpack_inputs(*shape)) for shape in ((2, 4, 3), (3, 5), (3, 3))],
]
