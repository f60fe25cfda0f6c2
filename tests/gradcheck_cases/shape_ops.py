"""Cases for shape, indexing and loss ops: several attribute combinations each, inputs a few dozen elements."""

import numpy as np

from . import Case, rng

r = rng(4)


def randn(*shape):
    return r.standard_normal(shape)


def probs(*shape):
    return r.uniform(0.1, 0.9, shape)


def ids(*values):
    return np.array(values, dtype=np.int64)


def i32(*values):
    return np.array(values, dtype=np.int32)


XSHAPE = {"Out": 1, "XShape": 1}

SHAPE = [
    Case("reshape2", {"X": randn(2, 3, 4)}, {"shape": [0, -1]}, outputs=XSHAPE),
    Case("reshape2", {"X": randn(2, 3, 4)}, {"shape": [4, 1, 6]}, outputs=XSHAPE),
    Case("reshape2", {"X": randn(2, 6)}, {"shape": [-1]}, outputs=XSHAPE),
    Case("reshape2", {"X": randn(2, 6), "ShapeTensor": [ids(3), ids(-1)]}, {"shape": [-1, -1]}, outputs=XSHAPE),
    Case("reshape2", {"X": randn(2, 6), "Shape": np.array([0, 3, 2], np.int32)}, outputs=XSHAPE),
    Case("transpose2", {"X": randn(2, 3, 4)}, {"axis": [2, 0, 1]}, outputs=XSHAPE),
    Case("transpose2", {"X": randn(3, 4)}, {"axis": [1, 0]}, outputs=XSHAPE),
    Case("transpose2", {"X": randn(2, 1, 3, 2)}, {"axis": [0, -1, 1, 2]}, outputs=XSHAPE),
    Case("squeeze2", {"X": randn(2, 1, 3, 1)}, {"axes": [1]}, outputs=XSHAPE),
    Case("squeeze2", {"X": randn(2, 1, 3, 1)}, {"axes": []}, outputs=XSHAPE),
    Case("squeeze2", {"X": randn(2, 1, 3, 1)}, {"axes": [0, -1]}, outputs=XSHAPE),
    Case("unsqueeze2", {"X": randn(2, 3)}, {"axes": [2, 0]}, outputs=XSHAPE),
    Case("unsqueeze2", {"X": randn(2, 3)}, {"axes": [-1]}, outputs=XSHAPE),
    Case("unsqueeze2", {"X": randn(2, 3), "AxesTensorList": [ids(1), ids(1)]}, outputs=XSHAPE),
    Case("unsqueeze2", {"X": randn(2, 3), "AxesTensor": i32(0, -1)}, {"axes": [1]}, outputs=XSHAPE),
    Case("flatten_contiguous_range", {"X": randn(2, 3, 2, 2)}, {"start_axis": 1, "stop_axis": 2}, outputs=XSHAPE),
    Case("flatten_contiguous_range", {"X": randn(2, 3, 4)}, {"start_axis": 0, "stop_axis": -1}, outputs=XSHAPE),
    Case("flatten_contiguous_range", {"X": randn(2, 3, 4)}, {"start_axis": -2, "stop_axis": -1}, outputs=XSHAPE),
    Case("stack", {"X": [randn(2, 3), randn(2, 3), randn(2, 3)]}, {"axis": 0}),
    Case("stack", {"X": [randn(2, 3), randn(2, 3)]}, {"axis": -1}),
    Case("stack", {"X": [randn(2, 3), randn(2, 3)]}, {"axis": 1}, wrt=["X1"]),
    Case("unstack", {"X": randn(3, 2, 2)}, {"axis": 0, "num": 3}, outputs={"Y": 3}),
    Case("unstack", {"X": randn(2, 3, 2)}, {"axis": -2, "num": 3}, outputs={"Y": 3}),
    Case("expand_v2", {"X": randn(3, 1)}, {"shape": [2, 3, 4]}),
    Case("expand_v2", {"X": randn(1, 4)}, {"shape": [3, -1]}),
    Case("expand_v2", {"X": randn(2, 1), "expand_shapes_tensor": [ids(2), ids(3)]}, {"shape": [-1, -1]}),
    Case("expand_v2", {"X": randn(3, 1), "Shape": i32(2, 3, 4)}, {"shape": [3, 1]}),
    Case("expand_as_v2", {"X": randn(3, 1), "Y": randn(2, 3, 4)}),
    Case("expand_as_v2", {"X": randn(4)}, {"target_shape": [3, 4]}),
    Case("tile", {"X": randn(2, 3)}, {"repeat_times": [2, 1]}),
    Case("tile", {"X": randn(2, 3)}, {"repeat_times": [2, 1, 2]}),
    Case("tile", {"X": randn(2, 1, 3)}, {"repeat_times": [3]}),
    Case("tile", {"X": randn(3), "RepeatTimes": np.array([2, 2], np.int32)}),
    Case("tile", {"X": randn(2, 3), "repeat_times_tensor": [ids(2), i32(1), ids(2)]}, {"repeat_times": [1]}),
    Case("pad", {"X": randn(2, 3)}, {"paddings": [1, 0, 2, 1], "pad_value": 0.5}),
    Case("pad", {"X": randn(2, 3, 2)}, {"paddings": [0, 1, 1, 0, 0, 2]}),
    Case("pad", {"X": randn(2, 3)}, {"paddings": [0, 0, 1, 2]}),
    Case("concat", {"X": [randn(2, 3), randn(2, 1), randn(2, 2)]}, {"axis": -1}),
    Case("concat", {"X": [randn(1, 3, 2), randn(2, 3, 2)]}, {"axis": -3}),
    Case("concat", {"X": [randn(2, 3), randn(2, 1), randn(2, 2)]}, {"axis": 1}, wrt=["X0", "X2"]),
    Case("split", {"X": randn(2, 6)}, {"axis": -1, "sections": [1, 2, 3]}, outputs={"Out": 3}),
    Case("split", {"X": randn(4, 2, 3)}, {"axis": -3, "sections": [-1, 3]}, outputs={"Out": 2}),
    Case("split", {"X": randn(2, 2, 4)}, {"axis": -1, "num": 2}, outputs={"Out": 2}),
    Case("split", {"X": randn(2, 4), "AxisTensor": ids(-1)}, {"axis": 0, "num": 2}, outputs={"Out": 2}),
    Case("split", {"X": randn(5, 2), "AxisTensor": i32(0), "SectionsTensorList": [ids(2), i32(-1)]},
         {"axis": 1, "sections": [1, 1]}, outputs={"Out": 2}),
    Case("concat", {"X": [randn(2, 3), randn(2, 1)], "AxisTensor": i32(1)}, {"axis": 0}),
]

PAD3D = [
    Case("pad3d", {"X": randn(1, 2, 2, 3, 3)},
         {"paddings": [1, 2, 1, 0, 0, 1], "mode": mode, "value": 0.5, "data_format": fmt})
    for mode in ("constant", "reflect", "replicate", "circular") for fmt in ("NCDHW", "NDHWC")
] + [Case("pad3d", {"X": randn(1, 1, 2, 3, 3), "Paddings": np.array([1, 1, 2, 0, 1, 0], np.int32)},
          {"mode": "reflect"})] + [
    Case("pad3d", {"X": randn(1, 1, 2, 3, 4)}, {"paddings": [-1, 2, 1, -1, -1, 1], "mode": mode, "value": 0.5})
    for mode in ("constant", "reflect", "replicate", "circular")   # a negative padding crops
]

INDEX = [
    Case("slice", {"Input": randn(3, 4, 5)}, {"axes": [0, 2], "starts": [1, -3], "ends": [3, 100]}),
    Case("slice", {"Input": randn(3, 4, 5)}, {"axes": [1], "starts": [-100], "ends": [-1]}),
    Case("slice", {"Input": randn(3, 4, 5)}, {"axes": [0, 1], "starts": [1, 2], "ends": [2, 3],
                                              "decrease_axis": [0, 1]}),
    Case("slice", {"Input": randn(3, 4), "StartsTensor": ids(1), "EndsTensorList": [ids(3)]},
         {"axes": [1], "starts": [-1], "ends": [-1], "infer_flags": [-1]}),
    Case("strided_slice", {"Input": randn(4, 6)}, {"axes": [1], "starts": [0], "ends": [6], "strides": [2]}),
    Case("strided_slice", {"Input": randn(4, 6), "StartsTensorList": [ids(5)], "StridesTensor": i32(-2)},
         {"axes": [1], "starts": [0], "ends": [-1], "strides": [1], "infer_flags": [-1]}),
    Case("slice", {"Input": randn(3, 4), "StartsTensorList": [i32(1)], "EndsTensor": ids(3)},
         {"axes": [1], "starts": [0], "ends": [1], "infer_flags": [-1]}),
    Case("strided_slice", {"Input": randn(4, 6)}, {"axes": [0, 1], "starts": [-1, 4], "ends": [-1, 0],
                                                   "strides": [-1, -3]}),
    Case("strided_slice", {"Input": randn(4, 6)}, {"axes": [1], "starts": [10], "ends": [-100], "strides": [-2]}),
    Case("strided_slice", {"Input": randn(4, 3, 2)}, {"axes": [0, 2], "starts": [-1, 0], "ends": [0, 1],
                                                      "strides": [1, 1], "infer_flags": [-1, 1],
                                                      "decrease_axis": [0]}),
    Case("gather", {"X": randn(4, 3), "Index": ids(3, 0, 3)}),
    Case("gather", {"X": randn(2, 4, 3), "Index": ids(1, 1, 2, 0, 3)}, {"axis": 1}),
    Case("gather", {"X": randn(2, 3, 4), "Index": ids(3, 0), "Axis": ids(-1)}),
    Case("gather", {"X": randn(4, 3), "Index": np.array(2)}),
    Case("gather_nd", {"X": randn(3, 4, 2), "Index": ids([0, 1], [2, 3], [0, 1])}),
    Case("gather_nd", {"X": randn(3, 4), "Index": ids([[2], [0]], [[1], [1]])}),
    Case("gather_nd", {"X": randn(2, 3, 2), "Index": ids([1, 2, 0], [0, 0, 1])}),
    Case("scatter", {"X": randn(5, 3), "Ids": ids(1, 3, 1), "Updates": randn(3, 3)}, {"overwrite": True}),
    Case("scatter", {"X": randn(5, 3), "Ids": ids(1, 3, 1), "Updates": randn(3, 3)}, {"overwrite": False}),
    Case("scatter", {"X": randn(4, 2, 2), "Ids": ids(0, 2), "Updates": randn(2, 2, 2)}),
    Case("top_k_v2", {"X": randn(3, 5)}, {"k": 2}, outputs={"Out": 1, "Indices": 1}),
    Case("top_k_v2", {"X": randn(4, 3, 2)}, {"k": 3, "axis": 0, "largest": False}, outputs={"Out": 1, "Indices": 1}),
    Case("top_k_v2", {"X": randn(2, 6), "K": ids(4)}, {"axis": -1, "sorted": False},
         outputs={"Out": 1, "Indices": 1}),
]

LOSS = [
    Case("sigmoid_cross_entropy_with_logits", {"X": randn(3, 4), "Label": probs(3, 4)}),
    Case("sigmoid_cross_entropy_with_logits", {"X": randn(3, 4), "Label": r.integers(0, 2, (3, 4)) * 1.0},
         {"normalize": True}),
    Case("sigmoid_cross_entropy_with_logits", {"X": randn(2, 3), "Label": np.array([[1., 0., -1.], [-1., 1., 0.]])},
         {"normalize": True, "ignore_index": -1}),
    Case("sigmoid_cross_entropy_with_logits", {"X": randn(3, 4), "Label": probs(3, 4), "pos_weight": probs(3, 4) * 3}),
    Case("bce_loss", {"X": probs(3, 4), "Label": probs(3, 4)}),
    Case("bce_loss", {"X": probs(5, 1), "Label": r.integers(0, 2, (5, 1)) * 1.0}),
    Case("huber_loss", {"X": randn(3, 4), "Y": randn(3, 4)}, {"delta": 0.7}, outputs={"Out": 1, "Residual": 1}),
    Case("huber_loss", {"X": randn(6, 1), "Y": randn(6, 1)}, {"delta": 2.0}, outputs={"Out": 1, "Residual": 1}),
    # Target's exact zeros: t log t has no derivative at 0 (gradc gives the left one, 0), so X's alone is checked
    Case("kldiv_loss", {"X": np.log(probs(3, 4)), "Target": np.where(probs(3, 4) > 0.3, probs(3, 4), 0)},
         {"reduction": "none"}, wrt=["X"]),
    Case("kldiv_loss", {"X": np.log(probs(3, 4)), "Target": probs(3, 4)}, {"reduction": "none"}),
    Case("kldiv_loss", {"X": randn(3, 4), "Target": probs(3, 4)}, {"reduction": "batchmean"}),
    Case("kldiv_loss", {"X": randn(2, 3, 2), "Target": probs(2, 3, 2)}, {"reduction": "mean"}),
    Case("kldiv_loss", {"X": randn(3, 4), "Target": probs(3, 4)}, {"reduction": "sum"}),
    Case("kldiv_loss", {"X": randn(3, 4), "Target": np.log(probs(3, 4))}, {"reduction": "mean", "log_target": True}),
    Case("softmax_with_cross_entropy", {"Logits": randn(3, 4, 2), "Label": r.dirichlet(np.ones(4), (3, 2))
                                        .transpose(0, 2, 1)}, {"axis": 1, "soft_label": True}),
    Case("softmax_with_cross_entropy", {"Logits": randn(4, 5), "Label": r.uniform(0, 1, (4, 5))},
         {"soft_label": True}),
    Case("softmax_with_cross_entropy", {"Logits": randn(2, 3, 4), "Label": ids([[1], [-1], [3]], [[0], [2], [-1]])},
         {"ignore_index": -1}),
    Case("softmax_with_cross_entropy", {"Logits": randn(3, 4, 2), "Label": ids([[1, 7]], [[7, 0]], [[3, 2]])},
         {"axis": -2, "ignore_index": 7}),
    Case("softmax_with_cross_entropy", {"Logits": probs(3, 4), "Label": ids([1], [0], [3])}, {"use_softmax": False}),
    Case("cross_entropy2", {"X": r.dirichlet(np.ones(4), 3), "Label": ids([1], [-100], [2])}),
    Case("cross_entropy2", {"X": r.dirichlet(np.ones(3), (2, 2)), "Label": ids([[2], [5]], [[5], [0]])},
         {"ignore_index": 5}),
    # smooth at x = 0, where Paddle 3.3.1's grad kernel gives -0.5 - label (docs/ops-activation-math.md)
    Case("sigmoid_cross_entropy_with_logits", {"X": np.array([[0.0, -0.0, 1.5], [0.0, -2.0, 0.0]]),
                                               "Label": np.array([[0.0, 1.0, 0.3], [0.25, 1.0, 0.7]])}),
]

CASES = SHAPE + PAD3D + INDEX + LOSS
