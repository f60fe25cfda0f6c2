"""Optional inputs of gradc.ops.scans: median's axes as a tensor (AxisTensor) or one tensor per axis
(AxisTensorList), which override the axis attribute (Paddle 3.3.1 reads them too)."""

import numpy as np

from . import SlotCase

X = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)

CASES = [
    SlotCase("median", "AxisTensor", {"x": X, "AxisTensor": np.array([2], np.int64)},
             {"out": np.median(X, axis=2, keepdims=True)}, {"axis": [1], "keepdim": True}),
    SlotCase("median", "AxisTensorList", {"x": X, "AxisTensorList": [np.array([0], np.int64)]},
             {"out": np.sort(X, axis=0)[:1]}, {"axis": [1], "keepdim": True, "mode": "min"}),
]
