"""Optional inputs of gradc.ops.math: tensors that override attributes."""

import numpy as np

from . import SlotCase

X = np.array([[0.5, 2.0, -1.5], [3.0, -0.25, 1.0]])

CASES = [
    SlotCase("pow", "FactorTensor", {"X": np.abs(X), "FactorTensor": np.array([3.0], "float32")},
             {"Out": np.abs(X) ** 3}, {"factor": 2.0}),
    SlotCase("clip", "Min", {"X": X, "Min": np.array([0.0])}, {"Out": np.clip(X, 0.0, 2.5)},
             {"min": -1.0, "max": 2.5}),
    SlotCase("clip", "Max", {"X": X, "Max": np.array([1.0])}, {"Out": np.clip(X, -1.0, 1.0)},
             {"min": -1.0, "max": 2.5}),
]
