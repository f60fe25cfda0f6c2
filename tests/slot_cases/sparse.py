"""Optional inputs of paddle.sparse's reshape, slice and sum (gradc.ops.sparse_shape): the shape, axes, starts and
ends given as a tensor or a list of 1-value tensors, over the attribute. x is a COO tensor (the harness builds it with
sparse_sparse_coo_tensor) and each expected output the dense op's on x.to_dense()."""

import numpy as np

from gradc.executor.sparse_value import SparseCoo

from . import SlotCase


def i32(*values):
    return np.array(values, np.int32)


def i64(*values):
    return np.array(values, np.int64)


SITES = np.array([[0, 1, 2, 3, 3, 1], [4, 0, 2, 1, 3, 3]])
X = SparseCoo(SITES, np.arange(1.0, 7.0), (4, 5))
DENSE = X.to_dense()
SLICE = {"axes": [0, 1], "starts": [1, 0], "ends": [4, 4]}


def _slice(slot, value, expected):
    return SlotCase("sparse_slice", slot, {"x": X, slot: value}, {"out": expected}, SLICE)


CASES = [
    SlotCase("sparse_reshape", "ShapeTensor", {"x": X, "ShapeTensor": i64(5, 4)}, {"out": DENSE.reshape(5, 4)},
             {"shape": [2, 10]}),
    SlotCase("sparse_reshape", "ShapeTensorList", {"x": X, "ShapeTensorList": [i32(10), i64(-1)]},
             {"out": DENSE.reshape(10, 2)}, {"shape": [2, 10]}),
    _slice("AxesTensor", i64(1, 0), DENSE[0:4, 1:4]),
    _slice("AxesTensorList", [i32(1), i64(0)], DENSE[0:4, 1:4]),
    _slice("StartsTensor", i64(2, 1), DENSE[2:4, 1:4]),
    _slice("StartsTensorList", [i32(0), i32(-3)], DENSE[0:4, 2:4]),
    _slice("EndsTensor", i64(2, -1), DENSE[1:2, 0:4]),
    _slice("EndsTensorList", [i64(3), i32(2)], DENSE[1:3, 0:2]),
    SlotCase("sparse_sum", "AxisTensor", {"x": X, "AxisTensor": i64(1)}, {"out": DENSE.sum(1)}, {"axis": [0]}),
    SlotCase("sparse_sum", "AxisTensorList", {"x": X, "AxisTensorList": [i32(0)]}, {"out": DENSE.sum(0)},
             {"axis": [1]}),
]
