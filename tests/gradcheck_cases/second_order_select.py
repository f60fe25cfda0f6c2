"""Second-derivative cases (as in second_order.py) for the ops that select or place with indices the forward
fixed: sorts, scatters, puts, crops, unpooling, maxout, 3-D max pooling with index."""

from __future__ import annotations

import numpy as np

import gradc
from programs import Net

from . import Case, rng
from .lod_rnn import third_order, third_order_checked
from .second_order import distinct, positive, randn, second_order
from .tensor_array import array, to_tensor, write

r = rng(47)


def ids(*rows, dtype=np.int64):
    return np.array(rows, dtype=dtype)


def unpool_inputs(x_shape, out_shape):
    """X and Indices of distinct positions in each plane, as max pooling gives."""
    planes = [r.choice(int(np.prod(out_shape)), int(np.prod(x_shape[2:])), replace=False)
              for _ in range(x_shape[0] * x_shape[1])]
    return {"X": randn(*x_shape), "Indices": np.array(planes, np.int32).reshape(x_shape)}


PUT_INDEX = ids([0, 0, 3], [1, 3, 2], [2, 2, 2])
# Reduce mul's later orders: put_along_axis_grad_grad along one more direction each backward, on groups of up to six
# factors (so that a fourth derivative's three-direction terms are not 0), zeros among them (two in one group)
PUT_GROUPS = ids([1, 1, 1, 1, 0], [0, 2, 2, 0, 2], [3, 3, 3, 3, 3])
MUL_WITH_ZEROS = second_order("put_along_axis", {"Input": np.array([[0.9, 0.0, -0.8, 1.1], [0.6, 1.2, -0.7, 0.0],
                                                                    [1.3, -0.5, 0.8, 0.7]]), "Index": PUT_GROUPS,
                                                 "Value": np.array([[0.8, -1.1, 0.7, 0.0, 1.2], [1.1, 0.0, -0.9, 0.6,
                                                                                                0.0],
                                                                    [-0.7, 1.3, 0.9, -1.0, 0.8]])},
                              {"Axis": 1, "Reduce": "mul"})
MUL_BROADCAST = second_order("put_along_axis", {"Input": np.array([[0.9, -1.2, 0.8, 1.1], [0.6, 1.2, -0.7, 0.5],
                                                                   [1.3, -0.5, 0.8, 0.7]]), "Index": PUT_GROUPS,
                                                "Value": np.array([[0.9], [-1.1], [0.8]])},
                             {"Axis": 1, "Reduce": "multiply", "Include_self": False})
# the second backward's directions made checked inputs, so the grads the op gives its directions are checked too
MUL_THIRD = [third_order_checked(case, "put_along_axis_grad_grad", None, ["Input0", "Value0"])
             for case in (MUL_WITH_ZEROS, MUL_BROADCAST)]

CASES = [
    *MUL_THIRD,
    *(Case("put_along_axis_grad_grad", {}, case.attrs, program=third_order(case, "put_along_axis_grad_grad",
                                                                         order=4).program, rtol=1e-4, atol=1e-6)
      for case in MUL_THIRD),
    second_order("top_k_v2", {"X": distinct(3, 4)}, {"k": 2}),
    second_order("top_k_v2", {"X": distinct(3, 2, 2)}, {"k": 2, "axis": 0, "largest": False}),
    second_order("argsort", {"X": distinct(2, 3)}),
    second_order("argsort", {"X": distinct(3, 2)}, {"axis": 0, "descending": True}),
    second_order("kthvalue", {"X": distinct(3, 4)}, {"k": 2}),
    second_order("kthvalue", {"X": distinct(3, 2, 2)}, {"k": 3, "axis": 0, "keepdim": True}),
    second_order("kthvalue", {"X": distinct(2, 3, 2)}, {"k": 1, "axis": 1}),
    second_order("scatter", {"X": randn(4, 2), "Ids": ids(1, 3, 1), "Updates": randn(3, 2)}, {"overwrite": True}),
    second_order("scatter", {"X": randn(4, 2), "Ids": ids(1, 3, 1), "Updates": randn(3, 2)}, {"overwrite": False}),
    second_order("scatter_nd_add", {"X": randn(3, 4), "Index": ids([0, 1], [2, -1], [0, 1]), "Updates": randn(3)}),
    second_order("index_add", {"X": randn(3, 4), "Index": ids(2, 0, 2), "AddValue": randn(3, 3)}, {"axis": 1}),
    *(second_order("put_along_axis", {"Input": randn(3, 4), "Index": PUT_INDEX, "Value": randn(3, 3)},
                   {"Axis": 1, "Reduce": reduce, "Include_self": include_self})
      for reduce in ("assign", "add", "mean", "amin", "amax", "mul") for include_self in (True, False)),
    # mul with zero factors (one in row 0's group of three, two in row 2's) and a broadcast Value
    second_order("put_along_axis", {"Input": np.array([[0.0, 1.5, -0.5, 2.0], [1.0, -2.0, 0.5, 0.0],
                                                       [0.7, 1.2, 0.0, -1.1]]), "Index": PUT_INDEX,
                                    "Value": np.array([[0.8, -1.3, 0.6], [1.1, 0.0, -0.4], [0.0, 0.9, 1.4]])},
                 {"Axis": 1, "Reduce": "mul"}),
    second_order("put_along_axis", {"Input": randn(3, 4), "Index": ids([2, -1, 0, 1]), "Value": randn(1, 4)},
                 {"Axis": 0, "Reduce": "multiply"}),
    # amin/amax with a broadcast Value, and with ties (Input equal to a value sent to it): ddOut shares them
    second_order("put_along_axis", {"Input": randn(3, 4), "Index": ids([2, 0, 0, 1]), "Value": randn(1, 4)},
                 {"Axis": 0, "Reduce": "amax"}),
    second_order("put_along_axis", {"Input": np.array([[0.5, 1.0], [2.0, -1.0]]), "Index": ids([0, 0], [1, 1]),
                                    "Value": np.array([[0.5, 0.5], [-1.0, 3.0]])},
                 {"Axis": 1, "Reduce": "amin"}, tied=True),
    second_order("set_value", {"Input": randn(3, 4, 2), "ValueTensor": randn(4)},
                 {"axes": [0, 2], "starts": [1, 0], "ends": [2, 1], "steps": [1, 1], "decrease_axes": [0, 2]}),
    second_order("set_value", {"Input": randn(2, 3)}, {"axes": [1], "starts": [0], "ends": [2], "steps": [1],
                                                       "shape": [1], "dtype": 6, "values": [2.5]}),
    second_order("expand_as_v2", {"X": randn(3, 1), "Y": randn(2, 3, 4)}),
    second_order("expand_as_v2", {"X": randn(4)}, {"target_shape": [3, 4]}),
    second_order("crop_tensor", {"X": randn(3, 4)}, {"shape": [2, -1], "offsets": [1, 1]}),
    second_order("crop_tensor", {"X": randn(3, 4), "Shape": ids(2, 2),
                                 "OffsetsTensor": [ids(0), ids(2, dtype=np.int32)]},
                 {"shape": [1, 1], "offsets": [0, 0]}),
    second_order("meshgrid", {"X": [randn(2), randn(3)]}, counts={"Out": 2}),
    second_order("unpool", unpool_inputs((1, 2, 2, 2), (4, 3)),
                 {"ksize": [2, 2], "strides": [2, 2], "output_size": [4, 3], "unpooling_type": "max"}),
    second_order("unpool3d", unpool_inputs((1, 1, 1, 2, 2), (2, 4, 2)),
                 {"ksize": [2, 2, 2], "strides": [2, 2, 2], "output_size": [2, 4, 2]}),
    second_order("maxout", {"X": distinct(2, 4, 2, 2)}, {"groups": 2}),
    second_order("maxout", {"X": distinct(1, 2, 2, 6)}, {"groups": 3, "axis": -1}),
    second_order("max_pool3d_with_index", {"X": distinct(1, 2, 2, 4, 4)}, {"ksize": [2, 2, 2], "strides": [2, 2, 2]},
                 wrt=["X"]),
    # max pooling in every layout: ddX picked at each window's first maximum
    second_order("pool2d", {"X": distinct(1, 3, 4, 2)}, {"pooling_type": "max", "ksize": [2, 2],
                                                        "data_format": "NHWC"}),
    second_order("pool2d", {"X": distinct(1, 2, 5, 4)}, {"pooling_type": "max", "ksize": [3, 2], "strides": [2, 1],
                                                        "paddings": [0, 2, 1, 0]}),
    second_order("pool2d", {"X": distinct(1, 5, 4, 2)}, {"pooling_type": "max", "ksize": [2, 3], "strides": [2, 2],
                                                        "padding_algorithm": "SAME", "data_format": "NHWC"}),
    second_order("pool2d", {"X": distinct(1, 1, 5, 5)}, {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2],
                                                        "padding_algorithm": "VALID"}),
    second_order("pool2d", {"X": distinct(1, 2, 5, 4)}, {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2],
                                                        "ceil_mode": True, "paddings": [1, 0]}),
    second_order("pool2d", {"X": distinct(1, 2, 5, 4)}, {"pooling_type": "max", "ksize": [3, 2], "adaptive": True}),
    second_order("pool3d", {"X": distinct(1, 2, 3, 4, 3)}, {"pooling_type": "max", "ksize": [2, 2, 2],
                                                           "strides": [1, 2, 2], "paddings": [0, 1, 0, 0, 1, 0]}),
    second_order("pool3d", {"X": distinct(1, 3, 4, 3, 2)}, {"pooling_type": "max", "ksize": [2, 2, 2],
                                                           "strides": [2, 2, 2], "ceil_mode": True,
                                                           "data_format": "NDHWC"}),
    second_order("pool3d", {"X": distinct(1, 1, 3, 4, 3)}, {"pooling_type": "max", "ksize": [2, 2, 2],
                                                           "global_pooling": True}),
    second_order("max_pool2d_with_index", {"X": distinct(1, 2, 5, 4)}, {"ksize": [2, 2], "strides": [2, 2],
                                                                       "ceil_mode": True}, wrt=["X"]),
    # the last row and column of windows are empty (mask -1): their ddOut is 0 (it was ddX's last cell)
    second_order("pool2d", {"X": distinct(1, 1, 3, 3)}, {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2],
                                                        "paddings": [1, 1], "ceil_mode": True}),
    second_order("max_pool2d_with_index", {"X": distinct(1, 1, 3, 3)}, {"ksize": [2, 2], "strides": [2, 2],
                                                                       "paddings": [1, 1], "ceil_mode": True},
                 wrt=["X"]),
    second_order("max_pool3d_with_index", {"X": distinct(1, 1, 3, 5, 4)}, {"ksize": [2, 3, 2], "adaptive": True},
                 wrt=["X"]),
    second_order("fractional_max_pool2d", {"x": distinct(1, 2, 5, 4)}, {"output_size": [3, 2], "random_u": 0.3},
                 wrt=["x"]),
    second_order("fractional_max_pool3d", {"x": distinct(1, 1, 4, 3, 3)}, {"output_size": [2, 2, 2],
                                                                          "kernel_size": [2, 2, 2], "random_u": 0.7},
                 wrt=["x"]),
    second_order("lp_pool2d", {"x": positive(1, 2, 4, 4)}, {"kernel_size": [2, 2], "strides": [2, 2], "norm_type": 2.0,
                                                            "pooling_type": "lp"}),
    second_order("lp_pool2d", {"x": positive(1, 3, 4, 2)}, {"kernel_size": [3, 2], "strides": [1, 2], "norm_type": 3.5,
                                                            "ceil_mode": True, "paddings": [1, 0],
                                                            "data_format": "NHWC"}),
    # adaptive windows and run-time kernel sizes: the window sums and their spread by lp_pool2d's own ops
    second_order("lp_pool2d", {"x": positive(1, 2, 5, 4)}, {"kernel_size": [2, 3], "norm_type": 3.0, "adaptive": True,
                                                            "pooling_type": "lp"}),
    second_order("lp_pool2d", {"x": positive(1, 2, 5, 4), "KernelSizeTensor": np.array([3, 2], np.int64)},
                 {"strides": [2, 1], "norm_type": 2.0, "pooling_type": "lp"}),
    second_order("lp_pool2d", {"x": positive(1, 4, 3, 2), "KernelSizeTensorList": [np.array([2], np.int32),
                                                                                 np.array([2], np.int32)]},
                 {"strides": [1, 1], "norm_type": 1.5, "paddings": [1, 0], "data_format": "NHWC",
                  "pooling_type": "lp"}),
    second_order("lp_pool2d", {"x": positive(1, 2, 3, 4)}, {"norm_type": 2.5, "global_pooling": True,
                                                            "pooling_type": "lp"}),
    second_order("lp_pool2d", {"x": randn(1, 2, 4, 4)}, {"kernel_size": [2, 2], "strides": [1, 2], "norm_type": 1.0,
                                                         "pooling_type": "lp"}),
]


def _array_join(axis: int, use_stack: bool, twice: bool = False) -> dict:
    """A = [x0, tanh(x1)]; loss1 = sum(W1 t2t(A)) (+ sum(W4 t2t(A, axis 0)) when ``twice``: the backward sums two
    array grads); loss2 = sum(W2 x0@GRAD) + sum(W3 x1@GRAD) (tanh of each grad when ``twice``, so the second backward
    differentiates that sum of arrays), differentiated with respect to x0, x1 and W1 (the join's dOut)."""
    net = Net()
    x0, x1, w1 = net.data("x0", [2, 3]), net.data("x1", [2, 3]), net.data("w1", [2, 6] if not use_stack else
                                                                         [2, 2, 3] if axis == 1 else [2, 3, 2])
    a = array(net, x0)
    write(net, x0, net.constant(0), a)
    write(net, net.tanh(x1), net.constant(1), a)
    joins = [(to_tensor(net, a, axis=axis, use_stack=use_stack), w1)]
    if twice:
        joins.append((to_tensor(net, a, axis=0, use_stack=False), net.data("w4", [4, 3])))
    parts = [net.op("reduce_sum", {"X": net.elementwise_mul(joined, w)}, {"reduce_all": True, "dim": []})
             for joined, w in joins]
    gradc.append_backward(net.program, net.op("sum", {"X": parts}))
    w2, w3 = net.data("w2", [2, 3]), net.data("w3", [2, 3])
    for w in (w2, w3):
        net.block.var(w).stop_gradient = True
    terms = [net.op("reduce_sum", {"X": net.elementwise_mul(net.tanh(x + "@GRAD") if twice else x + "@GRAD", w)},
                    {"reduce_all": True, "dim": []}) for x, w in ((x0, w2), (x1, w3))]
    feed = {name: randn(*net.shape(name)) for name in ("x0", "x1", "w1", "w2", "w3", *(["w4"] if twice else []))}
    return {"program": net.program, "feed": feed, "loss": net.op("sum", {"X": terms}), "wrt": ["x0", "x1", "w1"]}


CASES += [
    Case("tensor_array_to_tensor_grad", {}, {"use_stack": False, "axis": 1}, program=lambda: _array_join(1, False)),
    Case("tensor_array_to_tensor_grad", {}, {"use_stack": True, "axis": -1}, program=lambda: _array_join(-1, True)),
    Case("tensor_array_to_tensor_grad", {}, {"use_stack": False, "axis": 1, "joined": "twice"},
         program=lambda: _array_join(1, False, twice=True)),
]
