"""Optional inputs of gradc.ops.legacy_nn. The v1 resizes: SizeTensor, OutSize and Scale override out_h/out_w
(expected by construction: with align_corners a bilinear 2 -> 3 resize inserts midpoints; a nearest 2x
resize doubles every cell). fc's Bias is added to every row."""

import numpy as np

from . import SlotCase

X = np.array([[[[0.0, 1.0], [4.0, 9.0]]]])
MIDPOINTS = np.array([[[[0.0, 0.5, 1.0], [2.0, 3.5, 5.0], [4.0, 6.5, 9.0]]]])
DOUBLED = X.repeat(2, 2).repeat(2, 3)
BILINEAR = {"interp_method": "bilinear", "align_corners": True, "out_h": 5, "out_w": 5}
NEAREST = {"interp_method": "nearest", "align_corners": False, "out_h": 3, "out_w": 5}

FC_X, FC_W, FC_BIAS = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[1.0, 0.0, 2.0], [0.5, 1.0, -1.0]]), \
    np.array([10.0, 20.0, 30.0])

CASES = [
    SlotCase("bilinear_interp", "SizeTensor", {"X": X, "SizeTensor": [np.array([3], np.int32)] * 2},
             {"Out": MIDPOINTS}, BILINEAR, overrides=False),
    SlotCase("bilinear_interp", "OutSize", {"X": X, "OutSize": np.array([3, 3], np.int32)}, {"Out": MIDPOINTS},
             BILINEAR, overrides=False),
    SlotCase("bilinear_interp", "Scale", {"X": X, "Scale": np.array([1.5], np.float32)}, {"Out": MIDPOINTS},
             BILINEAR, overrides=False),
    SlotCase("nearest_interp", "SizeTensor", {"X": X, "SizeTensor": [np.array([4], np.int32)] * 2},
             {"Out": DOUBLED}, NEAREST, overrides=False),
    SlotCase("nearest_interp", "OutSize", {"X": X, "OutSize": np.array([4, 4], np.int32)}, {"Out": DOUBLED},
             NEAREST, overrides=False),
    SlotCase("nearest_interp", "Scale", {"X": X, "Scale": np.array([2.0], np.float32)}, {"Out": DOUBLED},
             NEAREST, overrides=False),
    SlotCase("fc", "Bias", {"Input": FC_X, "W": FC_W, "Bias": FC_BIAS}, {"Out": FC_X @ FC_W + FC_BIAS}),
]
