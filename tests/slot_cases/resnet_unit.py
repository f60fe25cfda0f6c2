"""resnet_unit's shortcut inputs (has_shortcut, 1x1 filters of 1, epsilon 0): X = [1, -1] and Z = [3, 1] over a batch
of two normalise to [1, -1] each; ScaleZ 2 and BiasZ 0.5 make the shortcut [2.5, -1.5], so Y = relu([3.5, -2.5]) =
[3.5, 0]; MeanZ 4 and VarZ 3 move (momentum 0.5) to the batch's mean 2 and variance 1: 3 and 2."""

import numpy as np

from . import SlotCase


def _column(*values):
    return np.array(values, dtype=np.float64).reshape(-1, 1, 1, 1)


ONE = np.ones(1)
SHORTCUT = {"X": _column(1, -1), "FilterX": np.ones((1, 1, 1, 1)), "ScaleX": ONE, "BiasX": np.zeros(1),
            "MeanX": np.zeros(1), "VarX": ONE, "Z": _column(3, 1), "FilterZ": np.ones((1, 1, 1, 1)),
            "ScaleZ": np.array([2.0]), "BiasZ": np.array([0.5]), "MeanZ": np.array([4.0]), "VarZ": np.array([3.0])}
ATTRS = {"has_shortcut": True, "epsilon": 0.0, "momentum": 0.5}
EXPECTED = {"Y": _column(3.5, 0), "RunningMeanZ": np.array([3.0]), "RunningVarZ": np.array([2.0])}

CASES = [SlotCase("resnet_unit", slot, SHORTCUT, EXPECTED, ATTRS, overrides=False)
         for slot in ("Z", "FilterZ", "ScaleZ", "BiasZ", "MeanZ", "VarZ")]
