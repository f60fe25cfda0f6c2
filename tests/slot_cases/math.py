"""Optional inputs of gradc.ops.math: tensors that override attributes."""

import numpy as np

from . import SlotCase

X = np.array([[0.5, 2.0, -1.5], [3.0, -0.25, 1.0]])
R = np.random.default_rng(5)
BX, BY, BW, BB = (R.standard_normal(shape) for shape in ((2, 3), (2, 4), (5, 3, 4), (1, 5)))

CASES = [
    SlotCase("pow", "FactorTensor", {"X": np.abs(X), "FactorTensor": np.array([3.0], "float32")},
             {"Out": np.abs(X) ** 3}, {"factor": 2.0}),
    SlotCase("clip", "Min", {"X": X, "Min": np.array([0.0])}, {"Out": np.clip(X, 0.0, 2.5)},
             {"min": -1.0, "max": 2.5}),
    SlotCase("clip", "Max", {"X": X, "Max": np.array([1.0])}, {"Out": np.clip(X, -1.0, 1.0)},
             {"min": -1.0, "max": 2.5}),
    SlotCase("scale", "ScaleTensor", {"X": X, "ScaleTensor": np.array([-3.0])}, {"Out": -3.0 * X + 0.5},
             {"scale": 2.0, "bias": 0.5}),
    SlotCase("scale", "BiasTensor", {"X": X, "BiasTensor": np.array([4.0])}, {"Out": 2.0 * (X + 4.0)},
             {"scale": 2.0, "bias": 0.5, "bias_after_scale": False}),
    SlotCase("bilinear_tensor_product", "Bias", {"X": BX, "Y": BY, "Weight": BW, "Bias": BB},
             {"Out": np.einsum("bm,kmn,bn->bk", BX, BW, BY) + BB}),
]
