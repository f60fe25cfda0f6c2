"""Optional inputs of the rearranging and tensor-making ops (gradc.ops.rearrange, gradc.ops.creation)."""

import numpy as np

from . import SlotCase

X = np.arange(6.0).reshape(2, 3)

SLICE = {"axes": [1], "starts": [0], "ends": [3], "steps": [1], "shape": [1], "dtype": 6, "values": [-1.0]}


def _set(x, index, value):
    out = x.copy()
    out[index] = value
    return out


CASES = [
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
