"""Cases for instance_norm (with and without affine), spectral_norm (0, 1, 2 rounds of power iteration and a
converged one) and lrn (both layouts)."""

import numpy as np

from . import Case, rng

r = rng(14)


def randn(*shape):
    return r.standard_normal(shape)


def spectral(shape, dim, iters):
    rows = shape[dim]
    cols = int(np.prod(shape)) // rows
    return Case("spectral_norm", {"Weight": randn(*shape), "U": randn(rows), "V": randn(cols)},
                {"dim": dim, "power_iters": iters})


CASES = [
    Case("instance_norm", {"X": randn(2, 3, 4), "Scale": randn(3), "Bias": randn(3)}),
    Case("instance_norm", {"X": randn(2, 2, 3, 2), "Scale": randn(2), "Bias": randn(2)}, {"epsilon": 1e-3}),
    Case("instance_norm", {"X": randn(1, 2, 2, 2, 3)}),
    spectral((4, 3), 0, 1),
    spectral((2, 3, 2, 2), 1, 2),
    spectral((3, 2, 2), 2, 0),
    spectral((3, 5), 1, 40),
    Case("lrn", {"X": randn(2, 6, 2, 3)}, {"n": 5, "k": 1.0, "alpha": 0.1, "beta": 0.75}),
    Case("lrn", {"X": randn(1, 2, 3, 4)}, {"n": 3, "k": 2.0, "alpha": 0.5, "beta": 0.6, "data_format": "NHWC"}),
]
