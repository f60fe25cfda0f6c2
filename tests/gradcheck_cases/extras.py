"""Cases for renorm (scaled and unscaled slices, several powers and axes), poisson and random (whose grads are zero).

renorm's inputs keep every slice's norm well away from max_norm, where the scale switches on. poisson draws
at rates of 1e-9: every draw is 0, so the central difference is the zero poisson_grad gives.
"""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(18)


def slices(*shape, norms, axis=0):
    """A random tensor whose slices along ``axis`` have the given 2-norms, no element near 0."""
    x = r.uniform(0.3, 1.0, shape) * r.choice([-1.0, 1.0], shape)
    moved = np.moveaxis(x, axis, 0)
    moved /= np.sqrt((moved ** 2).reshape(len(norms), -1).sum(axis=1)).reshape(-1, *[1] * (x.ndim - 1))
    moved *= np.array(norms, dtype=np.float64).reshape(-1, *[1] * (x.ndim - 1))
    return x


CASES = [
    Case("renorm", {"X": slices(3, 4, norms=[0.5, 2.0, 3.0])}, {"p": 2.0, "axis": 0, "max_norm": 1.0}),
    Case("renorm", {"X": slices(3, 4, norms=[0.5, 2.0, 0.4, 3.0], axis=1)}, {"p": 1.0, "axis": 1, "max_norm": 1.0}),
    Case("renorm", {"X": slices(2, 3, 4, norms=[1.0, 4.0, 0.2, 2.5], axis=2)}, {"p": 3.0, "axis": -1, "max_norm": 1.5}),
    Case("renorm", {"X": slices(2, 3, norms=[0.5, 2.0, 3.0], axis=1)}, {"p": 1.5, "axis": 1, "max_norm": 0.8}),
    Case("renorm", {"X": slices(3, 2, norms=[0.5, 0.7, 0.1])}, {"p": 2.0, "axis": 0, "max_norm": 5.0}),
    Case("poisson", {"X": np.full((2, 3), 1e-9)}, eps=1e-10),
    # a range of one value: every draw is 3 whatever x is, so the central difference is random_grad's 0
    Case("random", {"x": np.ones((2, 3))}, {"from": 3, "to": 4}),
]
CASES += [
    second_order("renorm", {"X": slices(3, 4, norms=[0.5, 2.0, 3.0])}, {"p": 2.0, "axis": 0, "max_norm": 1.0}),
    second_order("renorm", {"X": slices(2, 3, 4, norms=[1.0, 4.0, 0.2, 2.5], axis=2)},
                 {"p": 3.0, "axis": -1, "max_norm": 1.5}),
    second_order("renorm", {"X": slices(4, norms=[0.5, 2.0, 0.3, 3.0])}, {"p": 1.5, "axis": 0, "max_norm": 1.0}),
    second_order("poisson", {"X": np.full((2, 3), 1e-9)}, eps=1e-10),
    second_order("random", {"x": np.ones((2, 3))}, {"from": 3, "to": 4}),
]
