"""Cases for the foundation ops: arithmetic, activations, reductions, losses, split/concat."""

import numpy as np

from . import Case, rng

r = rng(1)


def randn(*shape):
    return r.standard_normal(shape)


CASES = [
    Case("relu", {"X": randn(3, 4)}),
    Case("sigmoid", {"X": randn(3, 4)}),
    Case("tanh", {"X": randn(3, 4)}),
    Case("softmax", {"X": randn(3, 4)}),
    Case("softmax", {"X": randn(2, 3, 4)}, {"axis": 1}),
    Case("elementwise_add", {"X": randn(2, 3, 4), "Y": randn(3)}, {"axis": 1}),
    Case("elementwise_add", {"X": randn(2, 3, 4), "Y": randn(4)}),
    Case("elementwise_add", {"X": randn(3, 1), "Y": randn(1, 4)}),
    Case("elementwise_sub", {"X": randn(3, 4), "Y": randn(2, 3, 4)}),
    Case("elementwise_sub", {"X": randn(2, 3, 4), "Y": randn(2, 3)}, {"axis": 0}),
    Case("elementwise_mul", {"X": randn(2, 3, 4), "Y": randn(2, 3, 4)}),
    Case("elementwise_mul", {"X": randn(2, 3, 4), "Y": randn(3, 1)}, {"axis": 1}),
    Case("elementwise_div", {"X": randn(2, 3, 4), "Y": randn(3, 4) + 3}),
    Case("mul", {"X": randn(2, 3, 4), "Y": randn(12, 5)}),
    Case("mul", {"X": randn(2, 3, 4), "Y": randn(4, 2, 3)}, {"x_num_col_dims": 2, "y_num_col_dims": 1}),
    Case("matmul_v2", {"X": randn(3, 4), "Y": randn(4, 5)}),
    Case("matmul_v2", {"X": randn(2, 1, 4, 3), "Y": randn(3, 4, 5)}, {"trans_x": True}),
    Case("matmul_v2", {"X": randn(2, 3, 4), "Y": randn(5, 4)}, {"trans_y": True}),
    Case("matmul_v2", {"X": randn(4), "Y": randn(3, 4, 5)}),
    Case("matmul_v2", {"X": randn(3, 4), "Y": randn(4)}),
    Case("scale", {"X": randn(3, 4)}, {"scale": 2.5, "bias": 1.0}),
    Case("scale", {"X": randn(3, 4)}, {"scale": -0.5, "bias": 1.0, "bias_after_scale": False}),
    Case("sum", {"X": [randn(3, 4), randn(3, 4), randn(3, 4)]}),
    Case("split", {"X": randn(3, 6)}, {"axis": 1, "sections": [2, -1]}, outputs={"Out": 2}),
    Case("split", {"X": randn(4, 3)}, {"axis": -2, "num": 2}, outputs={"Out": 2}),
    Case("concat", {"X": [randn(3, 4), randn(3, 2)]}, {"axis": -1}),
    Case("concat", {"X": [randn(1, 4), randn(3, 4)]}, {"axis": 0}),
    Case("reduce_mean", {"X": randn(3, 4, 5)}, {"dim": [1, -1], "keep_dim": True}),
    Case("reduce_mean", {"X": randn(3, 4)}, {"reduce_all": True}),
    Case("reduce_sum", {"X": randn(3, 4, 5)}, {"dim": [0]}),
    Case("reduce_sum", {"X": randn(3, 4)}, {"dim": [], "keep_dim": True}),
    Case("mean", {"X": randn(3, 4)}),
    Case("assign", {"X": randn(3, 4)}),
    Case("cast", {"X": randn(3, 4)}, {"in_dtype": 6, "out_dtype": 6}),
    Case("softmax_with_cross_entropy", {"Logits": randn(4, 5), "Label": r.integers(0, 5, (4, 1))}),
    Case("softmax_with_cross_entropy", {"Logits": randn(4, 5), "Label": np.array([[1], [-100], [4], [0]])}),
    Case("softmax_with_cross_entropy", {"Logits": randn(4, 5), "Label": r.dirichlet(np.ones(5), 4)},
         {"soft_label": True}),
    Case("softmax_with_cross_entropy", {"Logits": randn(3, 4, 2), "Label": r.integers(0, 4, (3, 1, 2))},
         {"axis": 1}),
    Case("cross_entropy2", {"X": r.dirichlet(np.ones(5), 4), "Label": r.integers(0, 5, (4, 1))}),
]
