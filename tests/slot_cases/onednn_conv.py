"""Optional inputs of gradc.ops.onednn_conv: fused_conv3d's Bias adds per channel, its ResidualData (with
fuse_residual_connection) after it."""

import numpy as np

from . import SlotCase


def volume(value, channels=1):
    return np.full((1, channels, 2, 2, 2), value, np.float64)


ONE = {"strides": [1, 1, 1], "paddings": [0, 0, 0], "dilations": [1, 1, 1]}
CASES = [
    # a 1 x 1 x 1 conv of ones by 2: 2, plus Bias 3
    SlotCase("fused_conv3d", "Bias", {"Input": volume(1), "Filter": volume(2)[:, :, :1, :1, :1],
                                      "Bias": np.array([3.0])},
             {"Output": volume(5)}, ONE, overrides=False),
    # 2 plus the residual 5
    SlotCase("fused_conv3d", "ResidualData", {"Input": volume(1), "Filter": volume(2)[:, :, :1, :1, :1],
                                              "ResidualData": volume(5)},
             {"Output": volume(7)}, {**ONE, "fuse_residual_connection": True}, overrides=False),
]
