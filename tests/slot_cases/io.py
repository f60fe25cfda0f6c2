"""The data op: the shape its shape tensors give checks the value fed to its output (-1: any size)."""

import numpy as np

from . import SlotCase

X23 = np.arange(6.0).reshape(2, 3)

CASES = [
    SlotCase("data", "ShapeTensor", {"ShapeTensor": np.array([-1, 3], np.int64)}, {"out": X23},
             {"shape": [5, 5], "dtype": 6}, overrides=False, fed={"out": X23}),
    SlotCase("data", "ShapeTensorList", {"ShapeTensorList": [np.array([2], np.int32), np.array([-1], np.int64)]},
             {"out": X23}, {"shape": [5, 5], "dtype": 6}, overrides=False, fed={"out": X23}),
]
