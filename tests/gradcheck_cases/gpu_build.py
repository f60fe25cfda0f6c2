"""Cases for the ops a CUDA build's Python API writes (gradc.ops.gpu_build): linear_v2 with either weight layout and
a batched input, var and std over some, all (an empty axis) or kept axes with corrections 0, 1 and 2, nansum (its
NaNs are in tests/test_gpu_build.py: central differences cannot step a NaN), and the depthwise convolutions with a
bias in both layouts, with and without a bias."""

from . import Case, rng
from .second_order import second_order

r = rng(131)


def randn(*shape):
    return r.standard_normal(shape)


DEPTHWISE = {"strides": [1, 1], "paddings": [1, 1], "dilations": [1, 1], "groups": 3, "padding_algorithm": "EXPLICIT"}
DEPTHWISE_3D = {"strides": [1, 2, 1], "paddings": [0, 1, 0], "dilations": [1, 1, 1], "groups": 2,
                "padding_algorithm": "EXPLICIT", "data_format": "NCDHW"}

CASES = [
    Case("linear_v2", {"input": randn(3, 4), "weight": randn(4, 5), "bias": randn(5)}),
    Case("linear_v2", {"input": randn(2, 3, 4), "weight": randn(5, 4), "bias": randn(5)}, {"transpose_weight": True}),
    Case("linear_v2", {"input": randn(2, 4), "weight": randn(4, 3), "bias": randn(1)}),
    Case("var", {"x": randn(3, 4)}, {"axis": [1], "keepdim": False, "unbiased": True, "correction": 1.0}),
    Case("var", {"x": randn(2, 3, 4)}, {"axis": [], "keepdim": False, "unbiased": False, "correction": 0.0}),
    Case("var", {"x": randn(2, 3, 4)}, {"axis": [0, -1], "keepdim": True, "unbiased": False, "correction": 2.0}),
    Case("std", {"x": randn(3, 4)}, {"axis": [1], "keepdim": False, "unbiased": True, "correction": 1.0}),
    Case("std", {"x": randn(2, 3, 4)}, {"axis": [1, 2], "keepdim": True, "unbiased": False, "correction": 0.0}),
    Case("std", {"x": randn(2, 5)}, {"axis": [], "keepdim": False, "unbiased": False, "correction": 2.5}),
    Case("nansum", {"x": randn(3, 4)}, {"axis": [1], "keepdim": False}),
    Case("nansum", {"x": randn(2, 3, 4)}, {"axis": [], "keepdim": True}),
    Case("depthwise_conv2d_bias", {"input": randn(2, 3, 5, 5), "filter": randn(6, 1, 3, 3), "bias": randn(6)},
         DEPTHWISE),
    Case("depthwise_conv2d_bias", {"input": randn(1, 4, 4, 3), "filter": randn(3, 1, 2, 2)},
         {**DEPTHWISE, "paddings": [0, 0], "data_format": "NHWC"}),
    Case("depthwise_conv3d_bias", {"input": randn(1, 2, 3, 4, 3), "filter": randn(2, 1, 2, 3, 2), "bias": randn(2)},
         DEPTHWISE_3D),
    second_order("linear_v2", {"input": randn(2, 3, 4), "weight": randn(4, 2), "bias": randn(2)}),
    second_order("linear_v2", {"input": randn(3, 4), "weight": randn(2, 4), "bias": randn(1)},
                 {"transpose_weight": True}),
    second_order("var", {"x": randn(3, 4)}, {"axis": [1], "keepdim": False, "unbiased": True, "correction": 1.0}),
    second_order("var", {"x": randn(2, 3)}, {"axis": [], "keepdim": True, "unbiased": False, "correction": 0.0}),
    second_order("std", {"x": randn(3, 4)}, {"axis": [0], "keepdim": True, "unbiased": True, "correction": 1.0}),
    second_order("std", {"x": randn(2, 3)}, {"axis": [], "keepdim": False, "unbiased": False, "correction": 2.0}),
    second_order("nansum", {"x": randn(3, 4)}, {"axis": [0], "keepdim": False}),
    second_order("depthwise_conv2d_bias", {"input": randn(1, 2, 4, 4), "filter": randn(4, 1, 3, 3),
                                           "bias": randn(4)}, {**DEPTHWISE, "groups": 2}),
    second_order("depthwise_conv3d_bias", {"input": randn(1, 2, 3, 3, 3), "filter": randn(2, 1, 2, 2, 2),
                                           "bias": randn(2)}, {**DEPTHWISE_3D, "strides": [1, 1, 1]}),
]
