"""Optional inputs of gradc.ops.onednn_conv: fused_conv3d's Bias adds per channel, its ResidualData (with
fuse_residual_connection) after it; conv2d_transpose_bias's Bias per channel."""

import numpy as np

from . import SlotCase


def volume(value, channels=1):
    return np.full((1, channels, 2, 2, 2), value, np.float64)


CASES = [
    # a 1 x 1 x 1 conv of ones by 2: 2, plus Bias 3
    SlotCase("fused_conv3d", "Bias", {"Input": volume(1), "Filter": volume(2)[:, :, :1, :1, :1],
                                      "Bias": np.array([3.0])},
             {"Output": volume(5)}, overrides=False),
    # 2 plus the residual 5
    SlotCase("fused_conv3d", "ResidualData", {"Input": volume(1), "Filter": volume(2)[:, :, :1, :1, :1],
                                              "ResidualData": volume(5)},
             {"Output": volume(7)}, {"fuse_residual_connection": True}, overrides=False),
    # a 1 x 1 transposed conv of ones by 2: 2, plus Bias 3
    SlotCase("conv2d_transpose_bias", "Bias", {"Input": np.ones((1, 1, 2, 2)), "Filter": np.full((1, 1, 1, 1), 2.0),
                                               "Bias": np.array([3.0])},
             {"Output": np.full((1, 1, 2, 2), 5.0)}, overrides=False),
]
