"""Optional inputs of gradc.ops.compat and interp_antialias: max/min_with_index's DimTensor overrides the dim
attribute (a 2 x 2 whose extremes differ by dim); interp_antialias's size_tensor, out_size and scale_tensor (a
scale of 1) ask for the input's own size, which copies the input (the out_* attributes ask for another shape:
overrides=False, the comparison without the input needs equal shapes)."""

import numpy as np

from . import SlotCase

X = np.array([[1.0, 5.0], [7.0, 2.0]])
ALONG_DIM_1 = np.array([1], np.int64)
IMAGE = np.arange(4.0).reshape(1, 1, 2, 2) ** 2
RESIZE = {"out_h": 3, "out_w": 3, "align_corners": False}

CASES = [
    SlotCase("max_with_index", "DimTensor", {"x": X, "DimTensor": ALONG_DIM_1},
             {"values": np.array([5.0, 7.0]), "indices": np.array([1, 0])}, {"dim": 0}),
    SlotCase("min_with_index", "DimTensor", {"x": X.T[::-1], "DimTensor": ALONG_DIM_1},
             {"values": np.array([2.0, 1.0]), "indices": np.array([1, 0])}, {"dim": 0}),
    SlotCase("interp_antialias", "size_tensor", {"x": IMAGE, "size_tensor": [np.array([2], np.int32)] * 2},
             {"output": IMAGE}, RESIZE, overrides=False),
    SlotCase("interp_antialias", "out_size", {"x": IMAGE, "out_size": np.array([2, 2], np.int32)},
             {"output": IMAGE}, RESIZE, overrides=False),
    SlotCase("interp_antialias", "scale_tensor", {"x": IMAGE, "scale_tensor": np.array([1.0], np.float32)},
             {"output": IMAGE}, RESIZE, overrides=False),
]
