"""Optional inputs of the rearranging and tensor-making ops (gradc.ops.rearrange, gradc.ops.creation)."""

import numpy as np

from . import SlotCase

X = np.arange(6.0).reshape(2, 3)

SLICE = {"axes": [1], "starts": [0], "ends": [3], "steps": [1], "shape": [1], "dtype": 6, "values": [-1.0]}


def _set(x, index, value):
    out = x.copy()
    out[index] = value
    return out


X45 = np.arange(20.0).reshape(4, 5)
CROP = {"shape": [2, 2], "offsets": [0, 0]}


def i32(*values):
    return np.array(values, np.int32)


CASES = [
    SlotCase("bincount", "Weights", {"X": np.array([0, 2, 2, 3]), "Weights": np.array([0.5, 1.0, 2.0, 4.0])},
             {"Out": np.array([0.5, 0.0, 3.0, 4.0])}),
    SlotCase("sequence_mask", "MaxLenTensor", {"X": np.array([1, 3]), "MaxLenTensor": np.array([4], np.int32)},
             {"Y": np.array([[1, 0, 0, 0], [1, 1, 1, 0]])}, {"maxlen": 3}, overrides=False),
    SlotCase("crop_tensor", "Shape", {"X": X45, "Shape": i32(1, 2)}, {"Out": X45[:1, :2]}, CROP, overrides=False),
    SlotCase("crop_tensor", "ShapeTensor", {"X": X45, "ShapeTensor": [i32(3), i32(-1)]}, {"Out": X45[:3, :]}, CROP,
             overrides=False),
    SlotCase("crop_tensor", "Offsets", {"X": X45, "Offsets": i32(2, 3)}, {"Out": X45[2:4, 3:5]}, CROP),
    SlotCase("crop_tensor", "OffsetsTensor", {"X": X45, "OffsetsTensor": [i32(1), i32(1)]}, {"Out": X45[1:3, 1:3]},
             CROP),
    SlotCase("repeat_interleave", "RepeatsTensor", {"X": X, "RepeatsTensor": np.array([0, 2], np.int64)},
             {"Out": np.repeat(X, [0, 2], axis=0)}, {"Repeats": 1, "dim": 0}, overrides=False),
    SlotCase("empty", "ShapeTensor", {"ShapeTensor": i32(2, 3)}, {"Out": np.zeros((2, 3))}, {"shape": [4], "dtype": 6},
             overrides=False),
    SlotCase("empty", "ShapeTensorList", {"ShapeTensorList": [i32(2), i32(3)]}, {"Out": np.zeros((2, 3))},
             {"shape": [4], "dtype": 6}, overrides=False),
    # randint's values are random: low = high - 1 makes them one known number
    SlotCase("randint", "ShapeTensor", {"ShapeTensor": i32(2, 3)}, {"Out": np.full((2, 3), 4)},
             {"shape": [], "low": 4, "high": 5}, overrides=False),
    SlotCase("randint", "ShapeTensorList", {"ShapeTensorList": [i32(2), i32(3)]}, {"Out": np.full((2, 3), 4)},
             {"shape": [4], "low": 4, "high": 5}, overrides=False),
    SlotCase("set_value", "ValueTensor", {"Input": X, "ValueTensor": np.array([7.0, 8.0, 9.0])},
             {"Out": _set(X, (slice(None), slice(0, 3)), [7.0, 8.0, 9.0])}, SLICE),
    SlotCase("set_value", "StartsTensorList", {"Input": X, "StartsTensorList": [np.array([2], np.int64)]},
             {"Out": _set(X, (slice(None), slice(2, 3)), -1.0)}, SLICE),
    SlotCase("set_value", "EndsTensorList", {"Input": X, "EndsTensorList": [np.array([1], np.int32)]},
             {"Out": _set(X, (slice(None), slice(0, 1)), -1.0)}, SLICE),
    SlotCase("set_value", "StepsTensorList", {"Input": X, "StepsTensorList": [np.array([2], np.int64)]},
             {"Out": _set(X, (slice(None), slice(0, 3, 2)), -1.0)}, SLICE),
    SlotCase("roll", "ShiftsTensor", {"X": X, "ShiftsTensor": np.array([2], np.int64)}, {"Out": np.roll(X, 2, axis=1)},
             {"shifts": [1], "axis": [1]}),
    SlotCase("label_smooth", "PriorDist", {"X": X / 10, "PriorDist": np.array([0.5, 0.25, 0.25])},
             {"Out": X / 10 * 0.8 + 0.2 * np.array([0.5, 0.25, 0.25])}, {"epsilon": 0.2}),
    # ValuesTensor is the in-place target of PIR's assign_value_: Paddle 3.3.1 reads `values`, and so does gradc
    # (given here as plain numbers, which the kernel takes as well as serialized Scalars)
    SlotCase("assign_value", "ValuesTensor", {"ValuesTensor": np.array([7.0, 8.0, 9.0], np.float32)},
             {"Out": np.array([1.0, 2.0, 3.0])}, {"shape": [3], "dtype": 5, "values": [1.0, 2.0, 3.0]},
             overrides=False),
]
