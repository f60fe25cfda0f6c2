"""Cases for gradc.ops.onednn_conv: fused_conv3d (bias, residual, activations, NDHWC, groups) and
conv2d_transpose_bias (strided with output_padding, groups, NHWC), first and second order (through the ops the
composite makers emit)."""

from . import Case, rng
from .second_order import second_order

r = rng(43)


def randn(*shape):
    return r.standard_normal(shape)


CONV3D = {"Input": randn(1, 2, 3, 3, 3), "Filter": randn(3, 2, 2, 2, 2), "Bias": randn(3)}
ONE = {"strides": [1, 1, 1], "paddings": [0, 0, 0], "dilations": [1, 1, 1]}
TRANSPOSE = {"Input": randn(1, 2, 3, 3), "Filter": randn(2, 3, 2, 2), "Bias": randn(3)}
STRIDED = {"strides": [2, 2], "paddings": [1, 1], "output_padding": [1, 1], "dilations": [1, 1]}
CASES = [
    Case("fused_conv3d", CONV3D, {**ONE, "paddings": [1, 1, 1], "fuse_activation": "tanh"}),
    Case("fused_conv3d", {**CONV3D, "ResidualData": randn(1, 3, 2, 2, 2)},
         {**ONE, "fuse_residual_connection": True, "fuse_activation": "sigmoid"}),
    Case("fused_conv3d", {"Input": randn(1, 2, 2, 3, 4), "Filter": randn(2, 4, 1, 2, 2), "Bias": randn(2)},
         {**ONE, "data_format": "NDHWC", "fuse_activation": "swish", "fuse_alpha": 1.5}),
    Case("fused_conv3d", {"Input": randn(1, 4, 2, 2, 2), "Filter": randn(4, 2, 1, 1, 1)}, {**ONE, "groups": 2}),
    Case("conv2d_transpose_bias", TRANSPOSE, STRIDED),
    Case("conv2d_transpose_bias", TRANSPOSE, {**STRIDED, "fuse_activation": "relu"}),   # ignored, as Paddle's kernel
    Case("conv2d_transpose_bias", {"Input": randn(1, 4, 2, 3), "Filter": randn(4, 1, 2, 2), "Bias": randn(2)},
         {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 2}),
    Case("conv2d_transpose_bias", {"Input": randn(1, 2, 3, 2), "Filter": randn(2, 3, 2, 2), "Bias": randn(3)},
         {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "data_format": "NHWC"}),
    second_order("fused_conv3d", {"Input": randn(1, 1, 2, 2, 2), "Filter": randn(2, 1, 1, 2, 2), "Bias": randn(2)},
                 {**ONE, "fuse_activation": "tanh"}, grad_type="fused_conv3d"),
    second_order("conv2d_transpose_bias", {"Input": randn(1, 1, 2, 2), "Filter": randn(1, 2, 2, 2),
                                           "Bias": randn(2)},
                 {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1]}, grad_type="conv2d_transpose_bias"),
]
