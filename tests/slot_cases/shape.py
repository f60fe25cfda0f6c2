"""Optional inputs of the shape, indexing, padding and tensor-creating ops: tensors that override attributes.

Where the slot changes only the output's shape (a constant fill, a tiling), ``overrides`` is off, since
values broadcast and cannot differ: the attribute is then set so that ignoring the slot gives another
shape (tests/test_tensor_inputs.py checks that it does).
"""

import numpy as np

from . import SlotCase


def i32(*values):
    return np.array(values, np.int32)


def i64(*values):
    return np.array(values, np.int64)


X22 = np.array([[1.0, 2.0], [3.0, 4.0]])
X26 = np.arange(12.0).reshape(2, 6)
X31 = np.array([[1.0], [2.0], [3.0]])
ROW = np.array([5.0, 7.0])
CONSTANT_FILL = {"value": 1.5, "dtype": 6}
UNIFORM_HALF = {"min": 0.5, "max": 0.5, "dtype": 6, "diag_num": 1, "diag_val": 2.0}   # 2 at [0], 0.5 elsewhere


def _slice_case(op, slot, value, attrs, expected):
    return SlotCase(op, slot, {"Input": X26, slot: value}, {"Out": expected}, {"axes": [1], **attrs})


SHAPE = [
    SlotCase("reshape2", "Shape", {"X": np.arange(12.0), "Shape": i32(12, 1)}, {"Out": np.arange(12.0)[:, None]},
             {"shape": [1, 12]}),
    SlotCase("reshape2", "ShapeTensor", {"X": np.arange(12.0), "ShapeTensor": [i32(12), i64(1)]},
             {"Out": np.arange(12.0)[:, None]}, {"shape": [1, 12]}),
    SlotCase("unsqueeze2", "AxesTensor", {"X": ROW, "AxesTensor": i32(1)}, {"Out": ROW[:, None]}, {"axes": [0]}),
    SlotCase("unsqueeze2", "AxesTensorList", {"X": ROW, "AxesTensorList": [i64(-1)]}, {"Out": ROW[:, None]},
             {"axes": [0]}),
    SlotCase("concat", "AxisTensor", {"X": [X22[:1, :1], X22[1:, 1:]], "AxisTensor": i32(-1)},
             {"Out": np.array([[1.0, 4.0]])}, {"axis": 0}),
    SlotCase("split", "AxisTensor", {"X": X22, "AxisTensor": i64(1)}, {"Out": [X22[:, :1], X22[:, 1:]]},
             {"axis": 0, "num": 2}),
    SlotCase("split", "SectionsTensorList", {"X": np.arange(4.0), "SectionsTensorList": [i32(2), i32(-1)]},
             {"Out": [np.arange(2.0), np.arange(2.0, 4.0)]}, {"sections": [3, 1]}, overrides=False),
    SlotCase("expand_v2", "Shape", {"X": X31, "Shape": i32(2, 3, 4)}, {"Out": np.broadcast_to(X31, (2, 3, 4))},
             {"shape": [3, 2]}, overrides=False),
    SlotCase("expand_v2", "expand_shapes_tensor", {"X": X31, "expand_shapes_tensor": [i32(2), i32(3), i64(4)]},
             {"Out": np.broadcast_to(X31, (2, 3, 4))}, {"shape": [3, 2]}, overrides=False),
    SlotCase("expand_as_v2", "Y", {"X": X31, "Y": np.zeros((2, 3, 4))}, {"Out": np.broadcast_to(X31, (2, 3, 4))},
             {"target_shape": [3, 2]}, overrides=False),
    SlotCase("tile", "RepeatTimes", {"X": ROW, "RepeatTimes": i32(2, 1)}, {"Out": np.tile(ROW, (2, 1))},
             {"repeat_times": [3]}, overrides=False),
    SlotCase("tile", "repeat_times_tensor", {"X": ROW, "repeat_times_tensor": [i32(2), i64(1)]},
             {"Out": np.tile(ROW, (2, 1))}, {"repeat_times": [3]}, overrides=False),
    SlotCase("pad3d", "Paddings", {"X": np.arange(3.0).reshape(1, 1, 1, 1, 3), "Paddings": i32(1, 0, 0, 0, 0, 0)},
             {"Out": np.array([9.0, 0.0, 1.0, 2.0]).reshape(1, 1, 1, 1, 4)},
             {"paddings": [0, 1, 0, 0, 0, 0], "value": 9.0}),
]

INDEX = [
    _slice_case("slice", "StartsTensor", i64(2), {"starts": [1], "ends": [3]}, X26[:, 2:3]),
    _slice_case("slice", "StartsTensorList", [i32(2)], {"starts": [1], "ends": [3]}, X26[:, 2:3]),
    _slice_case("slice", "EndsTensor", i32(2), {"starts": [1], "ends": [3]}, X26[:, 1:2]),
    _slice_case("slice", "EndsTensorList", [i64(-4)], {"starts": [1], "ends": [3]}, X26[:, 1:2]),
    _slice_case("strided_slice", "StartsTensor", i32(2), {"starts": [1], "ends": [3], "strides": [1]}, X26[:, 2:3]),
    _slice_case("strided_slice", "StartsTensorList", [i64(2)], {"starts": [1], "ends": [3], "strides": [1]},
                X26[:, 2:3]),
    _slice_case("strided_slice", "EndsTensor", i64(2), {"starts": [1], "ends": [3], "strides": [1]}, X26[:, 1:2]),
    _slice_case("strided_slice", "EndsTensorList", [i32(2)], {"starts": [1], "ends": [3], "strides": [1]},
                X26[:, 1:2]),
    _slice_case("strided_slice", "StridesTensor", i32(5), {"starts": [0], "ends": [6], "strides": [3]},
                X26[:, ::5]),
    _slice_case("strided_slice", "StridesTensorList", [i64(-5)], {"starts": [-1], "ends": [-7], "strides": [-3]},
                X26[:, ::-5]),
    SlotCase("gather", "Axis", {"X": X22, "Index": i64(1, 0), "Axis": i32(1)}, {"Out": X22[:, [1, 0]]}, {"axis": 0}),
    SlotCase("top_k_v2", "K", {"X": np.array([[3.0, 1.0, 4.0], [1.0, 5.0, 9.0]]), "K": i32(2)},
             {"Out": np.array([[4.0, 3.0], [9.0, 5.0]]), "Indices": np.array([[2, 0], [2, 1]])}, {"k": 1}),
]

TENSOR = [
    SlotCase("assign", "X", {"X": X22}, {"Out": X22}, overrides=False),   # no attribute: X is the value
    SlotCase("fill_constant", "ShapeTensor", {"ShapeTensor": i64(2, 3)}, {"Out": np.full((2, 3), 1.5)},
             {"shape": [4], **CONSTANT_FILL}, overrides=False),
    SlotCase("fill_constant", "ShapeTensorList", {"ShapeTensorList": [i32(2), i64(3)]}, {"Out": np.full((2, 3), 1.5)},
             {"shape": [4], **CONSTANT_FILL}, overrides=False),
    SlotCase("fill_constant", "ValueTensor", {"ValueTensor": np.array([2.5], np.float32)}, {"Out": np.full((2,), 2.5)},
             {"shape": [2], **CONSTANT_FILL}),
    # uniform/gaussian_random read ShapeTensor only when `shape` is empty (Paddle 3.3.1's argument mapping)
    SlotCase("uniform_random", "ShapeTensor", {"ShapeTensor": i64(2, 2)}, {"Out": np.array([[2.0, 0.5], [0.5, 0.5]])},
             {"shape": [], **UNIFORM_HALF}),
    SlotCase("uniform_random", "ShapeTensorList", {"ShapeTensorList": [i32(2), i32(2)]},
             {"Out": np.array([[2.0, 0.5], [0.5, 0.5]])}, {"shape": [3], **UNIFORM_HALF}, overrides=False),
    SlotCase("gaussian_random", "ShapeTensor", {"ShapeTensor": i32(2, 2)}, {"Out": np.full((2, 2), 1.5)},
             {"shape": [], "mean": 1.5, "std": 0.0, "dtype": 6}, overrides=False),
    SlotCase("gaussian_random", "ShapeTensorList", {"ShapeTensorList": [i32(2), i64(2)]},
             {"Out": np.full((2, 2), 1.5)}, {"shape": [3], "mean": 1.5, "std": 0.0, "dtype": 6}, overrides=False),
]

CASES = SHAPE + INDEX + TENSOR
