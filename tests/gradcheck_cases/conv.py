"""Cases for convolution and pooling: every padding algorithm, layout, groups, strides and dilations."""

import numpy as np

from . import Case, rng

r = rng(4)


def randn(*shape):
    return r.standard_normal(shape)


def distinct(*shape):
    """Values 0.1 apart in random order: max pooling has no ties, so it is differentiable."""
    return r.permutation(int(np.prod(shape))).reshape(shape) / 10.0


def conv(x, w, **attrs):
    return Case("conv2d", {"Input": x, "Filter": w}, attrs)


def deconv(x, w, **attrs):
    return Case("conv2d_transpose", {"Input": x, "Filter": w}, attrs)


def pool(x, **attrs):
    return Case("pool2d", {"X": x}, attrs)


CASES = [
    conv(randn(2, 2, 4, 4), randn(3, 2, 3, 3), paddings=[1, 1]),
    conv(randn(1, 4, 5, 5), randn(4, 2, 3, 3), groups=2, strides=[2, 2]),
    conv(randn(1, 2, 6, 6), randn(2, 2, 2, 2), dilations=[2, 2], paddings=[1, 1]),
    conv(randn(1, 2, 5, 5), randn(2, 2, 3, 3), padding_algorithm="SAME", strides=[2, 2], dilations=[2, 2]),
    conv(randn(1, 2, 5, 4), randn(2, 2, 3, 2), padding_algorithm="VALID", paddings=[3, 3]),
    conv(randn(1, 5, 3, 4), randn(2, 2, 2, 3), data_format="NHWC", groups=2, paddings=[0, 1, 2, 0], strides=[1, 2]),
    conv(randn(1, 2, 4, 5), randn(2, 2, 3, 3), data_format="AnyLayout", paddings=[2, 0, 1, 1], strides=[2, 1]),
    Case("depthwise_conv2d", {"Input": randn(1, 3, 4, 4), "Filter": randn(6, 1, 3, 3)},
         {"groups": 3, "paddings": [1, 1], "strides": [2, 2]}),
    Case("depthwise_conv2d", {"Input": randn(1, 3, 4, 2), "Filter": randn(4, 1, 2, 2)},
         {"groups": 2, "data_format": "NHWC", "padding_algorithm": "SAME"}),
    deconv(randn(1, 2, 3, 3), randn(2, 3, 3, 3), strides=[2, 2], paddings=[1, 1]),
    deconv(randn(1, 2, 3, 3), randn(2, 2, 3, 3), strides=[2, 2], paddings=[1, 1], output_size=[6, 6]),
    deconv(randn(1, 4, 3, 3), randn(4, 1, 2, 2), groups=2, strides=[2, 2], dilations=[2, 1],
           output_padding=[1, 0]),
    deconv(randn(1, 3, 3, 2), randn(2, 2, 3, 3), data_format="NHWC", padding_algorithm="SAME", strides=[2, 1]),
    deconv(randn(1, 2, 2, 3), randn(2, 2, 2, 3), padding_algorithm="VALID", paddings=[1, 1], strides=[1, 2]),
    deconv(randn(1, 2, 3, 3), randn(2, 2, 3, 3), paddings=[0, 1, 1, 0], strides=[2, 2]),
    pool(distinct(1, 2, 4, 4), pooling_type="max", ksize=[2, 2], strides=[2, 2]),
    pool(distinct(1, 2, 5, 5), pooling_type="max", ksize=[3, 3], strides=[2, 2], paddings=[1, 1], ceil_mode=True),
    pool(distinct(1, 2, 5, 4), pooling_type="max", ksize=[3, 2], strides=[2, 2], padding_algorithm="SAME"),
    pool(distinct(1, 2, 3, 4), pooling_type="max", ksize=[1, 1], global_pooling=True),
    pool(distinct(1, 2, 5, 7), pooling_type="max", ksize=[3, 2], adaptive=True),
    pool(distinct(1, 4, 3, 2), pooling_type="max", ksize=[2, 2], paddings=[1, 0, 0, 1], data_format="NHWC"),
    pool(randn(1, 2, 4, 4), pooling_type="avg", ksize=[3, 3], strides=[2, 2], paddings=[1, 1]),
    pool(randn(1, 2, 4, 4), pooling_type="avg", ksize=[3, 3], strides=[2, 2], paddings=[1, 1], exclusive=False),
    pool(randn(1, 2, 5, 5), pooling_type="avg", ksize=[2, 2], strides=[2, 2], ceil_mode=True, exclusive=False),
    pool(randn(1, 2, 6, 5), pooling_type="avg", ksize=[3, 2], strides=[2, 2], paddings=[0, 2, 1, 1], exclusive=False),
    pool(randn(1, 2, 6, 5), pooling_type="avg", ksize=[3, 2], strides=[2, 2], paddings=[0, 2, 1, 1], ceil_mode=True),
    pool(randn(1, 2, 3, 4), pooling_type="avg", ksize=[2, 2], global_pooling=True, paddings=[1, 1]),
    pool(randn(1, 2, 5, 7), pooling_type="avg", ksize=[2, 3], adaptive=True),
    pool(randn(1, 3, 4, 2), pooling_type="avg", ksize=[2, 2], paddings=[1, 0, 0, 1], data_format="NHWC"),
    pool(randn(1, 2, 5, 5), pooling_type="avg", ksize=[2, 3], strides=[2, 1], padding_algorithm="VALID",
         paddings=[2, 2]),
    # 3-D: the same geometry code with three spatial dims
    Case("conv3d", {"Input": randn(1, 2, 3, 4, 4), "Filter": randn(3, 2, 2, 3, 2)},
         {"paddings": [1, 0, 1], "strides": [1, 2, 1], "dilations": [1, 1, 2]}),
    Case("conv3d", {"Input": randn(1, 3, 3, 4, 4), "Filter": randn(2, 2, 2, 2, 2)},
         {"data_format": "NDHWC", "groups": 2, "padding_algorithm": "SAME", "strides": [2, 2, 2]}),
    Case("conv3d_transpose", {"Input": randn(1, 2, 2, 3, 2), "Filter": randn(2, 2, 2, 2, 3)},
         {"strides": [2, 1, 2], "paddings": [0, 1, 1, 0, 0, 1]}),
    Case("conv3d_transpose", {"Input": randn(1, 2, 2, 2, 4), "Filter": randn(4, 1, 2, 2, 2)},
         {"data_format": "NDHWC", "groups": 2, "output_size": [5, 4, 3], "strides": [2, 2, 1]}),
    Case("depthwise_conv2d_transpose", {"Input": randn(1, 3, 3, 3), "Filter": randn(3, 1, 3, 3)},
         {"groups": 3, "strides": [2, 2], "paddings": [1, 1]}),
    Case("pool3d", {"X": distinct(1, 2, 3, 4, 4)}, {"pooling_type": "max", "ksize": [2, 2, 2], "strides": [1, 2, 2]}),
    Case("pool3d", {"X": distinct(1, 2, 4, 5, 4)},
         {"pooling_type": "max", "ksize": [2, 3, 2], "strides": [2, 2, 2], "paddings": [1, 1, 0], "ceil_mode": True}),
    Case("pool3d", {"X": randn(1, 2, 3, 4, 5)},
         {"pooling_type": "avg", "ksize": [2, 2, 3], "strides": [1, 2, 2], "paddings": [1, 0, 1], "exclusive": False}),
    Case("pool3d", {"X": randn(1, 3, 4, 5, 2)}, {"pooling_type": "avg", "ksize": [2, 3, 1], "adaptive": True,
                                                  "data_format": "NDHWC"}),
]
