"""Optional inputs of lp_pool2d: the kernel size as one tensor or a list of 1-element tensors overrides the
kernel_size attribute."""

import numpy as np

from . import SlotCase

X = np.arange(1.0, 17.0).reshape(1, 1, 4, 4)
# 2 x 2 windows at stride 2: the Euclidean norm of each block (the attribute's 1 x 1 windows give X[::2, ::2])
BLOCK_NORMS = np.sqrt((X.reshape(1, 1, 2, 2, 2, 2) ** 2).sum(axis=(3, 5)))
ATTRS = {"kernel_size": [1, 1], "strides": [2, 2], "norm_type": 2.0, "pooling_type": "lp"}

CASES = [
    SlotCase("lp_pool2d", "KernelSizeTensor", {"x": X, "KernelSizeTensor": np.array([2, 2], np.int64)},
             {"out": BLOCK_NORMS}, ATTRS),
    SlotCase("lp_pool2d", "KernelSizeTensorList", {"x": X, "KernelSizeTensorList": [np.array([2], np.int64)] * 2},
             {"out": BLOCK_NORMS}, ATTRS),
]
