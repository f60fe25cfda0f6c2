"""Cases for the ops of Paddle 3's PIR-only API branches (gradc.ops.compat): paddle.compat's max / min with
indices (distinct values: no ties) and slogdet_v2 (well-conditioned matrices, one with a negative determinant),
embedding with gradients scaled by the ids' frequency (ids repeated, one the padding row), the nan/inf check
markers and antialiased resizing (shrinking, growing, by a scale tensor)."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(131)


def randn(*shape):
    return r.standard_normal(shape)


def distinct(*shape):
    """Values 0.1 apart in random order: max and min have no ties (drawn from this module's generator: the shared
    one of second_order would shift the draws of the modules after this one)."""
    return r.permutation(int(np.prod(shape))).reshape(shape) / 10.0 - 0.05 * np.prod(shape)


def matrices(*shape):
    """Random matrices near the identity (one reflected: a negative determinant)."""
    a = randn(*shape) * 0.3 + np.eye(shape[-1])
    a[..., 0, :] *= -1
    return a


IDS = np.array([[1, 3, 1], [2, 1, 3]], np.int64)
# each id once: the scaled gradient is the true one only there (a repeated id's is divided by its count, by design:
# tests/test_compat_ops.py checks that against Paddle); the second-order cases, of the grad op as it is, repeat ids
ONCE = np.array([[1, 3], [0, 4]], np.int64)

CASES = [
    Case("max_with_index", {"x": distinct(3, 4)}, {"dim": 1}),
    Case("max_with_index", {"x": distinct(2, 3, 4)}, {"dim": -3, "keepdim": True}),
    Case("min_with_index", {"x": distinct(3, 4)}, {"dim": 0}),
    Case("min_with_index", {"x": distinct(2, 3, 4)}, {"dim": 2, "keepdim": True}),
    Case("slogdet_v2", {"x": matrices(3, 3)}),
    Case("slogdet_v2", {"x": matrices(2, 4, 4)}),
    Case("embedding_with_scaled_gradient", {"x": ONCE, "weight": randn(5, 3)}),
    Case("embedding_with_scaled_gradient", {"x": ONCE, "weight": randn(5, 3)}, {"padding_idx": 3}),
    Case("enable_check_model_nan_inf", {"x": randn(2, 3)}, {"flag": 1}),
    Case("disable_check_model_nan_inf", {"x": randn(2, 3)}, {"flag": 0}),
    Case("interp_antialias", {"x": randn(1, 2, 5, 7)}, {"out_h": 3, "out_w": 4, "align_corners": False}),
    Case("interp_antialias", {"x": randn(2, 3, 4, 1)},
         {"out_h": 6, "out_w": 2, "interp_method": "bicubic", "data_format": "NHWC", "align_corners": False}),
    Case("interp_antialias", {"x": randn(1, 1, 6, 6), "scale_tensor": np.array([0.5], np.float32)},
         {"interp_method": "bicubic", "align_corners": True}),
    second_order("interp_antialias", {"x": randn(1, 2, 5, 4)}, {"out_h": 2, "out_w": 3, "align_corners": False}),
    second_order("max_with_index", {"x": distinct(3, 4)}, {"dim": 1}),
    second_order("min_with_index", {"x": distinct(2, 3, 4)}, {"dim": 1, "keepdim": True}),
    second_order("slogdet_v2", {"x": matrices(2, 3, 3)}),
    second_order("embedding_with_scaled_gradient", {"x": IDS, "weight": randn(5, 3)}, {"padding_idx": 2}),
    second_order("enable_check_model_nan_inf", {"x": randn(2, 3)}, grad_type="enable_check_model_nan_inf_grad"),
    second_order("disable_check_model_nan_inf", {"x": randn(2, 3)},
                 grad_type="disable_check_model_nan_inf_grad"),
]
