"""Optional inputs of the normalisation, dropout and embedding ops: batch_norm's Scale, Bias (absent: ones
and zeros) and MomentumTensor (overrides momentum), the affine Scale/Bias of layer_norm, group_norm and
instance_norm, dropout's Seed (overrides the seed attribute), one_hot_v2's depth_tensor (overrides depth)."""

import numpy as np

from . import SlotCase

X = np.array([[[0.5, -1.0], [2.0, 0.0]], [[1.5, 1.0], [-2.0, 3.0]], [[0.0, 0.5], [1.0, -0.5]]])  # [3, 2, 2]
SCALE, BIAS = np.array([1.5, -0.5]), np.array([0.25, 2.0])
RUNNING_MEAN, RUNNING_VAR = np.array([0.1, -0.2]), np.array([0.8, 1.2])


def _normalised(x, axes, eps=1e-5):
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


BN_XHAT = _normalised(X, (0, 2))
BN_INPUTS = {"X": X, "Scale": SCALE, "Bias": BIAS, "Mean": RUNNING_MEAN, "Variance": RUNNING_VAR}
# momentum 0.5 from the tensor instead of the attribute's 0.9
BN_MEAN_OUT = 0.5 * RUNNING_MEAN + 0.5 * X.mean((0, 2))

LN_X = X.reshape(3, 4)
LN_XHAT = _normalised(LN_X, 1)
GN_XHAT = _normalised(X.reshape(3, 1, 4), 2).reshape(X.shape)   # one group over [C, L]
IN_XHAT = _normalised(X, 2)

DROP_X = np.arange(1.0, 13.0).reshape(3, 4)
# Paddle 3.3.1's keep mask of dropout_prob 0.3 and seed 11 (a Seed tensor's 11, not the attribute's 3), as its CPU
# kernel draws it (gradc.executor.paddle_random)
DROP_OUT = DROP_X * np.array([0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0]).reshape(3, 4) / np.float32(0.7)

CASES = [
    SlotCase("batch_norm", "Scale", BN_INPUTS, {"Y": BN_XHAT * SCALE[:, None] + BIAS[:, None]}),
    SlotCase("batch_norm", "Bias", BN_INPUTS, {"Y": BN_XHAT * SCALE[:, None] + BIAS[:, None]}),
    SlotCase("batch_norm", "MomentumTensor", {**BN_INPUTS, "MomentumTensor": np.array([0.5], np.float32)},
             {"MeanOut": BN_MEAN_OUT}, {"momentum": 0.9}),
    SlotCase("layer_norm", "Scale", {"X": LN_X, "Scale": np.arange(1.0, 5.0)}, {"Y": LN_XHAT * np.arange(1.0, 5.0)}),
    SlotCase("layer_norm", "Bias", {"X": LN_X, "Bias": np.arange(1.0, 5.0)}, {"Y": LN_XHAT + np.arange(1.0, 5.0)}),
    SlotCase("group_norm", "Scale", {"X": X, "Scale": SCALE}, {"Y": GN_XHAT * SCALE[:, None]}, {"groups": 1}),
    SlotCase("group_norm", "Bias", {"X": X, "Bias": BIAS}, {"Y": GN_XHAT + BIAS[:, None]}, {"groups": 1}),
    SlotCase("instance_norm", "Scale", {"X": X, "Scale": SCALE}, {"Y": IN_XHAT * SCALE[:, None]}),
    SlotCase("instance_norm", "Bias", {"X": X, "Bias": BIAS}, {"Y": IN_XHAT + BIAS[:, None]}),
    SlotCase("dropout", "Seed", {"X": DROP_X, "Seed": np.array([11], np.int32)}, {"Out": DROP_OUT},
             {"dropout_prob": 0.3, "fix_seed": True, "seed": 3, "dropout_implementation": "upscale_in_train"}),
    # the attribute asks for depth 3, another shape: matching the expected output shows the tensor is read
    SlotCase("one_hot_v2", "depth_tensor", {"X": np.array([0, 3, 1]), "depth_tensor": np.array([4], np.int32)},
             {"Out": np.eye(4, dtype=np.float32)[[0, 3, 1]]}, {"depth": 3, "allow_out_of_range": True},
             overrides=False),
]
