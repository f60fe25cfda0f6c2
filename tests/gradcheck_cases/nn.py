"""Cases for normalisation, dropout and embedding ops (several attribute combinations each)."""

import numpy as np

from . import Case, rng

r = rng(4)


def randn(*shape):
    return r.standard_normal(shape)


def _bn_inputs(x_shape, channels):
    return {"X": randn(*x_shape), "Scale": randn(channels), "Bias": randn(channels),
            "Mean": randn(channels), "Variance": r.uniform(0.5, 1.5, channels)}


def _affine(shape, c):
    return {"X": randn(*shape), "Scale": randn(c), "Bias": randn(c)}


CASES = [
    Case("batch_norm", _bn_inputs((3, 2, 2, 2), 2)),
    Case("batch_norm", _bn_inputs((4, 3), 3), {"momentum": 0.5, "epsilon": 1e-3}),
    Case("batch_norm", _bn_inputs((2, 2, 3, 3), 3), {"data_layout": "NHWC"}),
    Case("batch_norm", _bn_inputs((2, 3, 4), 3), {"is_test": True}),
    Case("batch_norm", _bn_inputs((2, 2, 3, 2), 2), {"use_global_stats": True, "data_layout": "NHWC"}),
    Case("batch_norm", _bn_inputs((3, 2, 4), 2), {"is_test": True, "trainable_statistics": True}),
    Case("batch_norm", _bn_inputs((2, 2, 2, 3, 2), 2), {"momentum": 0.7}),
    Case("batch_norm", _bn_inputs((2, 2, 3, 2, 3), 3), {"data_layout": "NHWC", "epsilon": 1e-3}),
    Case("batch_norm", _bn_inputs((5, 3), 3), {"data_layout": "NHWC"}),
    Case("batch_norm", _bn_inputs((2, 3, 2, 2), 3), {"use_global_stats": True}),
    Case("batch_norm", {k: v for k, v in _bn_inputs((3, 2, 3), 2).items() if k not in ("Scale", "Bias")}),
    Case("layer_norm", _affine((3, 4), 4)),
    Case("layer_norm", _affine((2, 3, 4), 12)),
    Case("layer_norm", _affine((2, 3, 4), 4), {"begin_norm_axis": 2, "epsilon": 1e-3}),
    Case("layer_norm", {"X": randn(2, 3, 4)}, {"begin_norm_axis": 2}),
    Case("group_norm", _affine((2, 4, 3), 4), {"groups": 2}),
    Case("group_norm", _affine((2, 3, 2, 2), 3), {"groups": 1}),
    Case("group_norm", _affine((2, 2, 2, 4), 4), {"groups": 2, "data_layout": "NHWC", "epsilon": 1e-3}),
    Case("group_norm", {"X": randn(2, 4, 3)}, {"groups": 4}),
    # without Scale, Paddle 3.3.1's X@GRAD is 3.5% off here (k-diffusion's AdaGroupNorm, ppdiffusers' upscaler)
    Case("group_norm", {"X": randn(1, 8, 3, 3) * 3 + 1}, {"groups": 2}),
    Case("dropout", {"X": randn(4, 5)}, {"dropout_prob": 0.3, "fix_seed": True, "seed": 7}),
    Case("dropout", {"X": randn(4, 5)},
         {"dropout_prob": 0.4, "fix_seed": True, "seed": 3, "dropout_implementation": "upscale_in_train"}),
    Case("dropout", {"X": randn(3, 4), "Seed": np.array([11], np.int32)},
         {"dropout_prob": 0.5, "dropout_implementation": "upscale_in_train"}),
    Case("dropout", {"X": randn(3, 4)}, {"dropout_prob": 0.25, "is_test": True}),
    Case("dropout", {"X": randn(3, 4)},
         {"dropout_prob": 0.25, "is_test": True, "dropout_implementation": "upscale_in_train"}),
    Case("lookup_table_v2", {"W": randn(5, 3), "Ids": np.array([[0, 4, 2], [2, 1, 0]])}),
    Case("lookup_table_v2", {"W": randn(5, 3), "Ids": np.array([0, 4, 2, 2, 4])}, {"padding_idx": 2}),
    Case("lookup_table_v2", {"W": randn(4, 2), "Ids": np.array([[3], [0]], np.int32)}, {"padding_idx": 0}),
    Case("lookup_table", {"W": randn(5, 3), "Ids": np.array([[0], [4], [2], [4]])}, {"padding_idx": 2}),
]
