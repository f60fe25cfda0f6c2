"""Optional input of gradc.ops.index_elementwise: index_elementwise_put's value as a tensor (ValueTensor, the
PIR op's Scalar when the program computes it), which overrides the value attribute: x[:, [2, 0]] = 7."""

import numpy as np

from . import SlotCase

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
PUT = X.copy()
PUT[:, [2, 0]] = 7.0

CASES = [
    SlotCase("index_elementwise_put", "ValueTensor",
             {"x": X, "index": [np.array([[2], [0]], np.int64)], "ValueTensor": np.array([7.0], np.float32)},
             {"out": PUT}, {"input_dims": [2, 2, 4], "input_strides": [12, 0, 1], "index_dims": [3, -1, 2, 1],
                            "index_strides": [16], "value": 1.0}),
]
