"""Optional inputs of gradc.ops.inference_gpu. fused_conv2d_add_act adds Bias per channel and ResidualData before
its activation (identity here). fused_fc_elementwise_layernorm's X [1, 0] through W = I gives h = [1, 0], which the
layer norm (epsilon 0) maps to [1, -1]; Bias0 [0, 2] makes h [1, 2] (normalized [-1, 1]); Scale and Bias1 scale and
shift the normalized row. multihead_matmul with zero q and k weights attends evenly, v = Input: each row is the mean
[0.5, 0.5] of the rows; a BiasQK of -1e4 off the diagonal leaves each token its own row."""

import numpy as np

from . import SlotCase

IDENTITY = {"activation": "identity", "strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1}
FC = {"X": np.array([[1.0, 0.0]]), "W": np.eye(2), "Y": np.zeros((1, 2))}
FC_ATTRS = {"epsilon": 0.0, "begin_norm_axis": 1}
EYE_V = np.zeros((2, 3, 2))   # W [hidden, 3, all_head_size]: q and k weights zero, v weight the identity
EYE_V[:, 2, :] = np.eye(2)
ATTENTION = {"Input": np.eye(2).reshape(1, 2, 2), "W": EYE_V, "Bias": np.zeros((3, 2))}


def image(value, channels=1):
    return np.full((1, channels, 2, 2), value, np.float64)


CASES = [
    SlotCase("fused_conv2d_add_act", "Bias", {"Input": image(1), "Filter": image(2)[:, :, :1, :1],
                                              "Bias": np.array([3.0])}, {"Output": image(5)}, IDENTITY,
             overrides=False),
    SlotCase("fused_conv2d_add_act", "ResidualData", {"Input": image(1), "Filter": image(2)[:, :, :1, :1],
                                                      "ResidualData": image(5)}, {"Output": image(7)}, IDENTITY,
             overrides=False),
    SlotCase("fused_fc_elementwise_layernorm", "Bias0", {**FC, "Bias0": np.array([0.0, 2.0])},
             {"Out": np.array([[-1.0, 1.0]])}, FC_ATTRS, overrides=False),
    SlotCase("fused_fc_elementwise_layernorm", "Scale", {**FC, "Scale": np.array([2.0, 3.0])},
             {"Out": np.array([[2.0, -3.0]])}, FC_ATTRS, overrides=False),
    SlotCase("fused_fc_elementwise_layernorm", "Bias1", {**FC, "Bias1": np.array([1.0, 1.0])},
             {"Out": np.array([[2.0, 0.0]])}, FC_ATTRS, overrides=False),
    SlotCase("multihead_matmul", "BiasQK", {**ATTENTION, "BiasQK": np.array([[[[0.0, -1e4], [-1e4, 0.0]]]])},
             {"Out": np.eye(2).reshape(1, 2, 2)}, {"head_number": 1, "alpha": 1.0}, overrides=False),
]
