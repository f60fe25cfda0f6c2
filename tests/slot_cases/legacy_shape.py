"""Optional inputs of the v1 shape ops (gradc.ops.legacy_shape): tensors that override attributes, and crop's Y,
whose shape replaces the shape attribute. Where the slot changes only the output's shape, ``overrides`` is off
(as in shape.py): the attribute is set so that ignoring the slot gives another shape."""

import numpy as np

from . import SlotCase


def i32(*values):
    return np.array(values, np.int32)


X23 = np.arange(6.0).reshape(2, 3)
X45 = np.arange(20.0).reshape(4, 5)
TOP = np.array([[3.0, 1.0, 4.0], [1.0, 5.0, 9.0]])

CASES = [
    SlotCase("expand", "ExpandTimes", {"X": X23, "ExpandTimes": i32(1, 2)}, {"Out": np.tile(X23, (1, 2))},
             {"expand_times": [2, 1]}, overrides=False),
    SlotCase("expand", "expand_times_tensor", {"X": X23, "expand_times_tensor": [i32(1), i32(2)]},
             {"Out": np.tile(X23, (1, 2))}, {"expand_times": [2, 1]}, overrides=False),
    SlotCase("top_k", "K", {"X": TOP, "K": i32(2)}, {"Out": np.array([[4.0, 3.0], [9.0, 5.0]])}, {"k": 1}),
    SlotCase("reshape", "Shape", {"X": X23, "Shape": i32(3, 2)}, {"Out": X23.reshape(3, 2)}, {"shape": [6, 1]},
             overrides=False),
    SlotCase("reshape", "ShapeTensor", {"X": X23, "ShapeTensor": [i32(6), i32(1)]}, {"Out": X23.reshape(6, 1)},
             {"shape": [3, 2]}, overrides=False),
    SlotCase("crop", "Y", {"X": X45, "Y": np.zeros((2, 3))}, {"Out": X45[1:3, 1:4]},
             {"shape": [3, 3], "offsets": [1, 1]}, overrides=False),
    SlotCase("crop", "Offsets", {"X": X45, "Offsets": i32(2, 3)}, {"Out": X45[2:4, 3:5]},
             {"shape": [2, 2], "offsets": [0, 0]}),
]
