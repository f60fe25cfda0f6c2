"""The cuDNN fusions' optional vectors: fused_scale_bias_add_relu's scale2 / bias2 turn x2 [1, 1, 1, 2] = [1, -3]
into [2, -3] + [0, 4] = [2, 1] before relu(x1 + ...); fused_scale_bias_relu_conv_bn's scale / bias (its prologue)
turn x [1, 1, 1, 2] = [1, -1] into relu([2, -2] + [0, 1]) = [2, 0], which a 1x1 filter [1, 1] sums to out 2."""

import numpy as np

from . import SlotCase

ADD_RELU = {"x1": np.zeros((1, 1, 1, 2)), "scale1": np.ones(2), "bias1": np.zeros(2), "x2": np.array([[[[1.0, -3.0]]]]),
            "scale2": np.array([2.0, 1.0]), "bias2": np.array([0.0, 4.0])}
CONV_BN = {"x": np.array([[[[1.0, -1.0]]]]), "w": np.ones((1, 2, 1, 1)), "scale": np.array([2.0, 2.0]),
           "bias": np.array([0.0, 1.0]), "bn_scale": np.ones(1), "bn_bias": np.zeros(1),
           "input_running_mean": np.zeros(1), "input_running_var": np.ones(1)}
PROLOGUE = {"fuse_prologue": True, "paddings": [0, 0]}

CASES = [
    SlotCase("fused_scale_bias_add_relu", "scale2", ADD_RELU, {"out": np.array([[[[2.0, 1.0]]]])},
             {"fuse_dual": True}, overrides=False),
    SlotCase("fused_scale_bias_add_relu", "bias2", ADD_RELU, {"out": np.array([[[[2.0, 1.0]]]])},
             {"fuse_dual": True}, overrides=False),
    SlotCase("fused_scale_bias_relu_conv_bn", "scale", CONV_BN, {"out": np.array([[[[2.0]]]])}, PROLOGUE,
             overrides=False),
    SlotCase("fused_scale_bias_relu_conv_bn", "bias", CONV_BN, {"out": np.array([[[[2.0]]]])}, PROLOGUE,
             overrides=False),
]
