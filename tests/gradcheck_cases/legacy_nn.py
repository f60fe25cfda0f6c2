"""Cases for gradc.ops.legacy_nn: the v1 resizes (size, scale attribute, size inputs), fc (in_num_col_dims,
bias shapes, relu, padded weights), hinge_loss and l1_norm away from their kinks, and the grad ops' makers."""

import numpy as np

from . import Case, rng
from .second_order import away, second_order

r = rng(23)


def randn(*shape):
    return r.standard_normal(shape)


def resize(op, method, x, **attrs):
    return Case(op, {"X": x}, {"interp_method": method, **attrs})


# margins 1 - logit (2 label - 1) of 1.3, 3, -0.7, 1.4, 0.5, -0.6: none at the kink
HINGE = {"Logits": np.array([[0.3], [-2.0], [1.7], [0.4], [-0.5], [-1.6]]),
         "Labels": np.array([[0.0], [1.0], [1.0], [0.0], [0.0], [0.0]])}

CASES = [
    resize("bilinear_interp", "bilinear", randn(1, 2, 3, 4), out_h=5, out_w=6, align_corners=True),
    resize("bilinear_interp", "bilinear", randn(1, 2, 3, 4), scale=1.7, align_corners=False, align_mode=0),
    resize("bilinear_interp", "bilinear", randn(2, 3, 4, 2), out_h=2, out_w=5, align_corners=False,
           data_layout="NHWC"),
    resize("bilinear_interp", "bicubic", randn(1, 1, 3, 4), out_h=4, out_w=6, align_corners=False),
    resize("nearest_interp", "nearest", randn(1, 2, 3, 4), out_h=5, out_w=7, align_corners=False),
    resize("nearest_interp", "nearest", randn(1, 2, 5, 4), scale=1.5, align_corners=True),
    Case("bilinear_interp", {"X": randn(1, 2, 3, 3), "OutSize": np.array([4, 2], np.int32)},
         {"interp_method": "bilinear", "out_h": 9, "out_w": 9, "align_corners": False}),
    Case("nearest_interp", {"X": randn(1, 1, 3, 2), "Scale": np.array([2.0], np.float32)},
         {"interp_method": "nearest", "align_corners": False}),
    Case("fc", {"Input": randn(2, 3), "W": randn(3, 4), "Bias": randn(4)}),
    Case("fc", {"Input": randn(2, 3, 4), "W": randn(4, 5), "Bias": randn(1, 5)},
         {"in_num_col_dims": 2, "activation_type": "relu"}),
    Case("fc", {"Input": randn(2, 3, 2), "W": randn(10, 8)}, {"in_num_col_dims": 1, "padding_weights": True}),
    Case("hinge_loss", HINGE),
    Case("l1_norm", {"X": away(3, 4)}),
    second_order("bilinear_interp", {"X": randn(1, 1, 2, 3)}, {"out_h": 3, "out_w": 4, "interp_method": "bilinear"}),
    second_order("nearest_interp", {"X": randn(1, 1, 2, 2)}, {"out_h": 4, "out_w": 3, "interp_method": "nearest"}),
    second_order("hinge_loss", HINGE),
    second_order("l1_norm", {"X": away(2, 3)}),
    # fc has no grad op: second derivatives through the ops its composite maker emits
    second_order("fc", {"Input": randn(2, 3, 2), "W": randn(2, 4), "Bias": randn(4)},
                 {"in_num_col_dims": 2, "activation_type": "relu"}, grad_type="fc"),
    second_order("fc", {"Input": randn(2, 3), "W": randn(7, 9)}, {"padding_weights": True}, grad_type="fc"),
]
