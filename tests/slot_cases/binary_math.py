"""Optional inputs of gradc.ops.binary_math: the Rtol/Atol tensors of isclose and allclose, which override the
string attributes."""

import numpy as np

from . import SlotCase

A, B = np.array([1.0, 2.0, 3.0]), np.array([1.05, 2.0, 3.5])
RTOL, ATOL = np.array([0.1]), np.array([0.6])

CASES = [
    SlotCase("isclose", "Rtol", {"Input": A, "Other": B, "Rtol": RTOL}, {"Out": np.array([True, True, False])}),
    SlotCase("isclose", "Atol", {"Input": A, "Other": B, "Atol": ATOL}, {"Out": np.array([True, True, True])}),
    SlotCase("allclose", "Rtol", {"Input": A[:2], "Other": B[:2], "Rtol": RTOL}, {"Out": np.array(True)}),
    SlotCase("allclose", "Atol", {"Input": A, "Other": B, "Atol": ATOL}, {"Out": np.array(True)},
             {"rtol": "0.0"}),
]
