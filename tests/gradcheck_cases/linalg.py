"""Cases for gradc.ops.linalg and linalg_decomp, batched and not. Matrices are kept well conditioned (a diagonal
shift), Cholesky inputs positive definite, and spectra without repeated values (svd, eigh divide by their gaps).
The ops that read one triangle (cholesky, cholesky_solve's Y, triangular_solve's X, eigh) get full random
matrices: the gradient is the one of the triangle they read."""

import numpy as np

from . import Case, rng

r = rng(11)


def randn(*shape):
    return r.standard_normal(shape)


def shifted(*shape, by=3.0):
    """Random square matrices plus ``by`` times the identity: far from singular."""
    return randn(*shape) + by * np.eye(shape[-1])


def positive_definite(*shape):
    """A A^T + I with A random, then a random upper triangle (cholesky reads the lower one only)."""
    a = randn(*shape)
    spd = a @ np.swapaxes(a, -1, -2) + np.eye(shape[-1])
    return np.tril(spd) + np.triu(randn(*shape), 1)


def with_upper_read(spd):
    """The same positive definite matrices for upper=True: the upper triangle holds them, the lower is noise."""
    return np.swapaxes(spd, -1, -2)


SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])   # rank 2: det 0, cofactors not 0
SPD = positive_definite(2, 3, 3)
MATRIX_OUTPUTS = {"Out": 1, "Pivots": 1, "Infos": 1}

CASES = [
    Case("inverse", {"Input": shifted(3, 3)}),
    Case("inverse", {"Input": shifted(2, 2, 4, 4)}),
    Case("determinant", {"Input": randn(3, 3)}),
    Case("determinant", {"Input": randn(2, 4, 4)}),
    Case("determinant", {"Input": SINGULAR}),          # the cofactors, where Paddle 3.3.1 gives zeros
    Case("slogdeterminant", {"Input": randn(3, 3)}),
    Case("slogdeterminant", {"Input": randn(2, 4, 4)}),
    Case("cholesky", {"X": SPD}),
    Case("cholesky", {"X": with_upper_read(SPD)}, {"upper": True}),
    Case("cholesky_solve", {"X": randn(2, 3, 2), "Y": shifted(2, 3, 3)}),
    Case("cholesky_solve", {"X": randn(3, 4), "Y": shifted(2, 3, 3)}, {"upper": True}),   # batch broadcast
    Case("triangular_solve", {"X": shifted(2, 3, 3), "Y": randn(2, 3, 2)}),
    Case("triangular_solve", {"X": shifted(3, 3), "Y": randn(2, 3, 4)}, {"upper": False, "transpose": True}),
    Case("triangular_solve", {"X": shifted(2, 3, 3), "Y": randn(3, 1)}, {"unitriangular": True}),
    Case("solve", {"X": shifted(2, 3, 3), "Y": randn(2, 3, 2)}),
    Case("solve", {"X": shifted(2, 3, 3), "Y": randn(3)}),            # one vector for every matrix
    Case("solve", {"X": shifted(2, 3, 3), "Y": randn(2, 3)}),         # a vector per matrix
    Case("solve", {"X": shifted(3, 3), "Y": randn(2, 3, 2)}),
    *[Case("matrix_power", {"X": shifted(2, 3, 3, by=1.0) / 2}, {"n": n}) for n in (0, 1, 3)],
    *[Case("matrix_power", {"X": shifted(3, 3)}, {"n": n}) for n in (-1, -3)],
    Case("qr", {"X": randn(2, 4, 3)}),
    Case("qr", {"X": randn(3, 5)}),                                   # M < N
    Case("qr", {"X": randn(3, 3)}, {"mode": "complete"}),
    Case("qr", {"X": randn(2, 3, 4)}, {"mode": "complete"}),
    Case("qr", {"X": randn(4, 3)}, {"mode": "r"}),                    # Paddle 3.3.1 has no gradient here
    Case("svd", {"X": randn(2, 4, 3)}),
    Case("svd", {"X": randn(3, 5)}),
    Case("svd", {"X": randn(3, 3)}, {"full_matrices": True}),
    Case("eigh", {"X": randn(2, 3, 3)}),
    Case("eigh", {"X": randn(4, 4)}, {"UPLO": "U"}),
    Case("lu", {"X": randn(2, 3, 3)}, outputs=MATRIX_OUTPUTS),
    Case("lu", {"X": randn(4, 3)}, outputs=MATRIX_OUTPUTS),
    Case("lu", {"X": randn(2, 3, 5)}, outputs=MATRIX_OUTPUTS),
    Case("lu", {"X": shifted(3, 3)}, {"pivots": False}, outputs=MATRIX_OUTPUTS),
]
