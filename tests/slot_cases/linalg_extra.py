"""Optional inputs of gradc.ops.linalg_extra: matrix_rank's TolTensor (one tolerance per matrix, overriding the tol
attribute) and matrix_rank_atol_rtol's rtol (without it, the default relative tolerance applies where atol is 0)."""

import numpy as np

from . import SlotCase

# singular values 3, 2, 1, 0 and, doubled, 6, 4, 2, 0
STACK = np.stack([np.diag([3.0, 2.0, 1.0, 0.0]), np.diag([6.0, 4.0, 2.0, 0.0])])

CASES = [
    SlotCase("matrix_rank", "TolTensor", {"X": STACK, "TolTensor": np.array([1.5, 3.5])},
             {"Out": np.array([2, 2])}, {"tol": 0.5, "use_default_tol": False}),
    SlotCase("matrix_rank_atol_rtol", "rtol", {"x": STACK, "atol": np.zeros(2), "rtol": np.array([0.5, 0.5])},
             {"out": np.array([2, 2])}),
]
