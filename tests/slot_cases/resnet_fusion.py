"""resnet_unit's shortcut inputs (has_shortcut, 1x1 filters of 1, epsilon 0): X = [1, -1] and Z = [3, 1] over a batch
of two normalise to [1, -1] each; ScaleZ 2 and BiasZ 0.5 make the shortcut [2.5, -1.5], so Y = relu([3.5, -2.5]) =
[3.5, 0]; MeanZ 4 and VarZ 3 move (momentum 0.5) to the batch's mean 2 and unbiased variance 2 (cuDNN's BN finalize;
the biased one is 1): 3 and 2.5."""

import numpy as np

from . import SlotCase


def _column(*values):
    return np.array(values, dtype=np.float64).reshape(-1, 1, 1, 1)


ONE = np.ones(1)
SHORTCUT = {"X": _column(1, -1), "FilterX": np.ones((1, 1, 1, 1)), "ScaleX": ONE, "BiasX": np.zeros(1),
            "MeanX": np.zeros(1), "VarX": ONE, "Z": _column(3, 1), "FilterZ": np.ones((1, 1, 1, 1)),
            "ScaleZ": np.array([2.0]), "BiasZ": np.array([0.5]), "MeanZ": np.array([4.0]), "VarZ": np.array([3.0])}
ATTRS = {"has_shortcut": True, "epsilon": 0.0, "momentum": 0.5}
EXPECTED = {"Y": _column(3.5, 0), "RunningMeanZ": np.array([3.0]), "RunningVarZ": np.array([2.5])}

CASES = [SlotCase("resnet_unit", slot, SHORTCUT, EXPECTED, ATTRS, overrides=False)
         for slot in ("Z", "FilterZ", "ScaleZ", "BiasZ", "MeanZ", "VarZ")]

# resnet_basic_block's shortcut (NCHW, one channel, a batch of two 1x1 pixels, epsilon 0): X = [1, -1] through filter
# 1 and BN1 stays [1, -1], relu [1, 0]; conv2 (filter 1) and BN2 give [1, -1]. Filter3 = 2 makes [2, -2], which BN3
# normalises to [1, -1] and Scale3 3, Bias3 0.5 turn to [3.5, -2.5]: Y = relu([4.5, -3.5]) = [4.5, 0]. Mean3 4 and
# Var3 2 move (momentum 0.5) to the batch's 0 and 4: 2 and 3.
ONE_FILTER = np.ones((1, 1, 1, 1))
BLOCK = {"X": _column(1, -1), **{f"{slot}{b}": value for b in "12" for slot, value in (
    ("Filter", ONE_FILTER), ("Scale", ONE), ("Bias", np.zeros(1)), ("Mean", np.zeros(1)), ("Var", ONE))},
    "Filter3": 2 * ONE_FILTER, "Scale3": np.array([3.0]), "Bias3": np.array([0.5]), "Mean3": np.array([4.0]),
    "Var3": np.array([2.0])}
BLOCK_ATTRS = {"has_shortcut": True, "epsilon": 0.0, "momentum": 0.5, "find_conv_input_max": False}
BLOCK_EXPECTED = {"Y": _column(4.5, 0), "Mean3Out": np.array([2.0]), "Var3Out": np.array([3.0])}
CASES += [SlotCase("resnet_basic_block", slot, BLOCK, BLOCK_EXPECTED, BLOCK_ATTRS, overrides=False)
          for slot in ("Filter3", "Scale3", "Bias3", "Mean3", "Var3")]
