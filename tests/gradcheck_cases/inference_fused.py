"""Cases for gradc.ops.inference_fused's differentiable ops: fusion_repeated_fc_relu (two layers, inputs
away from relu's kink) and fused_conv2d (bias, residual, the activations its composite maker spells, NHWC, groups),
first and second order (through the ops the makers emit)."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(41)


def randn(*shape):
    return r.standard_normal(shape)


def fc_layers(*widths):
    """X [3, widths[0]] and one (W, Bias) per layer, the biases large enough that no pre-activation is near 0."""
    ws = [randn(a, b) * 0.5 for a, b in zip(widths, widths[1:])]
    return {"X": randn(3, widths[0]), "W": ws, "Bias": [np.full(w.shape[1], 2.0) for w in ws]}


CONV = {"Input": randn(1, 2, 4, 4), "Filter": randn(3, 2, 3, 3), "Bias": randn(3)}
PADDED = {"strides": [1, 1], "paddings": [1, 1], "dilations": [1, 1], "groups": 1}
CASES = [
    Case("fusion_repeated_fc_relu", fc_layers(4, 3, 2)),
    Case("fusion_repeated_fc_relu", fc_layers(2, 5, 3)),
    Case("fused_conv2d", CONV, PADDED),
    Case("fused_conv2d", {**CONV, "ResidualData": randn(1, 3, 4, 4)},
         {**PADDED, "fuse_residual_connection": True, "fuse_activation": "tanh"}),
    Case("fused_conv2d", CONV, {**PADDED, "fuse_activation": "swish", "fuse_alpha": 1.5}),
    Case("fused_conv2d", CONV, {**PADDED, "fuse_activation": "gelu_tanh"}),
    Case("fused_conv2d", {"Input": randn(1, 3, 3, 4), "Filter": randn(2, 4, 2, 2), "Bias": randn(2)},
         {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1, "data_format": "NHWC",
          "fuse_activation": "sigmoid"}),
    Case("fused_conv2d", {"Input": randn(1, 4, 3, 3), "Filter": randn(4, 2, 2, 2)},
         {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 2}),
    second_order("fusion_repeated_fc_relu", fc_layers(3, 2, 2), counts={"ReluOut": 1},
                 grad_type="fusion_repeated_fc_relu"),
    second_order("fused_conv2d", {"Input": randn(1, 1, 3, 3), "Filter": randn(2, 1, 2, 2), "Bias": randn(2)},
                 {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1,
                  "fuse_activation": "tanh"}, grad_type="fused_conv2d"),
]
