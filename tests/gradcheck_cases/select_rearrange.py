"""Cases for the ops that pick, place and rearrange elements (gradc.ops.select, gradc.ops.rearrange) and
label_smooth: every attribute variant that changes the math, tensor-valued inputs, repeated and negative
indices."""

import numpy as np

from . import Case, rng

r = rng(11)


def randn(*shape):
    return r.standard_normal(shape)


def ids(*rows):
    return np.array(rows, dtype=np.int64)


REARRANGE = [
    Case("flip", {"X": randn(2, 3, 4)}, {"axis": [0, 2]}),
    Case("flip", {"X": randn(3, 4)}, {"axis": [-1]}),
    Case("roll", {"X": randn(3, 4)}, {"shifts": [1, -2], "axis": [0, 1]}),
    Case("roll", {"X": randn(3, 4)}, {"shifts": [5], "axis": []}),
    Case("roll", {"X": randn(2, 5), "ShiftsTensor": ids(7)}, {"shifts": [1], "axis": [-1]}),
    Case("tril_triu", {"X": randn(2, 3, 4)}, {"lower": True, "diagonal": 0}),
    Case("tril_triu", {"X": randn(3, 4)}, {"lower": False, "diagonal": 1}),
    Case("tril_triu", {"X": randn(4, 3)}, {"lower": True, "diagonal": -1}),
    Case("meshgrid", {"X": [randn(2), randn(3), randn(4)]}, outputs={"Out": 3}),
    Case("meshgrid", {"X": [randn(), randn(3)]}, outputs={"Out": 2}),
    Case("unbind", {"X": randn(2, 3, 2)}, {"axis": 1}, outputs={"Out": 3}),
    Case("unbind", {"X": randn(2, 3)}, {"axis": -2}, outputs={"Out": 2}),
    Case("pixel_shuffle", {"X": randn(1, 8, 2, 3)}, {"upscale_factor": 2}),
    Case("pixel_shuffle", {"X": randn(2, 2, 3, 9)}, {"upscale_factor": 3, "data_format": "NHWC"}),
    Case("pixel_unshuffle", {"X": randn(1, 2, 4, 6)}, {"downscale_factor": 2}),
    Case("pixel_unshuffle", {"X": randn(1, 4, 2, 3)}, {"downscale_factor": 2, "data_format": "NHWC"}),
    Case("channel_shuffle", {"X": randn(1, 6, 2, 2)}, {"groups": 3}),
    Case("channel_shuffle", {"X": randn(2, 2, 1, 6)}, {"groups": 2, "data_format": "NHWC"}),
    Case("repeat_interleave", {"X": randn(2, 3)}, {"Repeats": 2, "dim": 1}),
    Case("repeat_interleave", {"X": randn(3, 2), "RepeatsTensor": ids(2, 0, 1)}, {"Repeats": 5, "dim": -2}),
    Case("diag_v2", {"X": randn(3)}, {"offset": -1, "padding_value": 0.5}),
    Case("diag_v2", {"X": randn(3, 4)}, {"offset": 1}),
    Case("diag_v2", {"X": randn(4, 3)}, {"offset": -2}),
    Case("label_smooth", {"X": r.uniform(0, 1, (3, 4))}, {"epsilon": 0.1}),
    Case("label_smooth", {"X": r.uniform(0, 1, (2, 2, 3)), "PriorDist": np.array([0.5, 0.3, 0.2])}, {"epsilon": 0.3}),
]

SELECT = [
    Case("index_select", {"X": randn(3, 4), "Index": ids(2, 0, 2)}, {"dim": 1}),
    Case("index_select", {"X": randn(3, 2, 2), "Index": ids(-1, 0)}, {"dim": -3}),
    Case("index_sample", {"X": randn(3, 5), "Index": ids([0, 4], [1, 1], [3, 2])}),
    Case("take_along_axis", {"Input": randn(3, 4), "Index": ids([0, 3, 3], [1, 0, 2], [2, 2, 1])}, {"Axis": 1}),
    Case("take_along_axis", {"Input": randn(3, 4), "Index": ids([-1, 0, 1, 1], [2, 2, 0, 1])}, {"Axis": 0}),
    Case("scatter_nd_add", {"X": randn(3, 4), "Index": ids([1], [1], [0]), "Updates": randn(3, 4)}),
    Case("scatter_nd_add", {"X": randn(3, 4), "Index": ids([0, 1], [2, -1], [0, 1]), "Updates": randn(3)}),
    Case("scatter_nd_add", {"X": randn(2, 3), "Index": np.zeros((2, 0), np.int64), "Updates": randn(2, 2, 3)}),
    Case("argsort", {"X": randn(3, 4)}, {"axis": -1}, outputs={"Out": 1, "Indices": 1}),
    Case("argsort", {"X": randn(3, 2, 2)}, {"axis": 0, "descending": True}, outputs={"Out": 1, "Indices": 1}),
    Case("kthvalue", {"X": randn(3, 4)}, {"k": 2}, outputs={"Out": 1, "Indices": 1}),
    Case("kthvalue", {"X": randn(3, 2, 2)}, {"k": 3, "axis": 0, "keepdim": True}, outputs={"Out": 1, "Indices": 1}),
    Case("index_add", {"X": randn(3, 4), "Index": ids(2, 0, 2), "AddValue": randn(3, 3)}, {"axis": 1}),
    Case("index_add", {"X": randn(3, 2), "Index": ids(-1), "AddValue": randn(1, 2)}),
    Case("crop_tensor", {"X": randn(3, 4)}, {"shape": [2, -1], "offsets": [1, 1]}),
    Case("crop_tensor", {"X": randn(3, 4), "Shape": ids(2, 2), "OffsetsTensor": [ids(0), np.array([2], np.int32)]},
         {"shape": [1, 1], "offsets": [0, 0]}),
    Case("masked_select", {"X": randn(3, 4), "Mask": r.uniform(size=(3, 4)) > 0.4}),
    Case("masked_select", {"X": randn(4), "Mask": r.uniform(size=(3, 4)) > 0.5}),
    Case("masked_select", {"X": randn(3, 1), "Mask": r.uniform(size=(3, 4)) > 0.5}),
]

# duplicate targets ([0, 0] and [2, 2] in rows 0 and 2) exercise how each mode combines values
PUT_INDEX = ids([0, 0, 3], [1, 3, 2], [2, 2, 2])
PUT = [
    Case("put_along_axis", {"Input": randn(3, 4), "Index": PUT_INDEX, "Value": randn(3, 3)},
         {"Axis": 1, "Reduce": reduce, "Include_self": include_self})
    for reduce in ("assign", "add", "mul", "mean", "amin", "amax") for include_self in (True, False)
] + [
    Case("put_along_axis", {"Input": randn(3, 4), "Index": ids([2, -1, 0, 1]), "Value": randn(1, 4)},
         {"Axis": 0, "Reduce": "multiply"}),
    Case("put_along_axis", {"Input": randn(2, 3), "Index": ids([1], [1]), "Value": np.zeros((2, 1))},
         {"Axis": 1, "Reduce": "mul"}),   # a zero factor: the others' product, not a division by it
]

SET_VALUE = [
    Case("set_value", {"Input": randn(3, 4, 2), "ValueTensor": randn(4)},
         {"axes": [0, 2], "starts": [1, 0], "ends": [2, 1], "steps": [1, 1], "decrease_axes": [0, 2]}),
    Case("set_value", {"Input": randn(3, 4, 2), "ValueTensor": randn(1)},
         {"axes": [0, 1], "starts": [-1, 3], "ends": [-4, -5], "steps": [-1, -2]}),   # reversed, through index 0
    Case("set_value", {"Input": randn(3, 4), "ValueTensor": randn(1, 4)},   # x[1] = v: Paddle drops v's leading 1
         {"axes": [0], "starts": [1], "ends": [2], "steps": [1], "decrease_axes": [0]}),
    Case("set_value", {"Input": randn(4), "ValueTensor": randn(1)},
         {"axes": [0], "starts": [2], "ends": [3], "steps": [1], "decrease_axes": [0]}),
    Case("set_value", {"Input": randn(3, 4), "ValueTensor": randn(3, 1, 1)},
         {"axes": [1], "starts": [2], "ends": [3], "steps": [1], "decrease_axes": [1], "none_axes": [1, 2]}),
    Case("set_value", {"Input": randn(3, 4), "ValueTensor": randn(2, 4), "StartsTensorList": [ids(1)],
                       "StepsTensorList": [ids(1)]}, {"axes": [0], "starts": [0], "ends": [3], "steps": [2]}),
    Case("set_value", {"Input": randn(2, 3)}, {"axes": [1], "starts": [0], "ends": [2], "steps": [1],
                                               "shape": [1], "dtype": 6, "values": [2.5]}),
]

CASES = REARRANGE + SELECT + PUT + SET_VALUE
