"""Cases for max pooling with a mask (strided, padded, ceil_mode, adaptive, global), unpooling, lp_pool2d
and fractional max pooling (a fixed random_u). Inputs are distinct values, so the maxima have no ties."""

import numpy as np

from . import Case, rng

r = rng(13)


def distinct(*shape):
    return r.permutation(int(np.prod(shape))).reshape(shape) / 7.0 - 1.0


def positive(*shape):
    return r.uniform(0.5, 2.0, shape)


def unpool_inputs(x_shape, out_shape):
    """X and Indices of distinct positions in each plane, as max pooling gives."""
    planes = [r.choice(int(np.prod(out_shape)), int(np.prod(x_shape[2:])), replace=False) for _ in range(
        x_shape[0] * x_shape[1])]
    return {"X": distinct(*x_shape), "Indices": np.array(planes, np.int32).reshape(x_shape)}


CASES = [
    Case("max_pool2d_with_index", {"X": distinct(2, 2, 4, 5)}, {"ksize": [2, 2], "strides": [2, 2]}),
    Case("max_pool2d_with_index", {"X": distinct(1, 2, 5, 5)}, {"ksize": [3, 2], "strides": [2, 1],
                                                               "paddings": [1, 0]}),
    Case("max_pool2d_with_index", {"X": distinct(1, 2, 5, 6)}, {"ksize": [2, 2], "strides": [2, 2],
                                                               "ceil_mode": True}),
    Case("max_pool2d_with_index", {"X": distinct(1, 2, 5, 7)}, {"ksize": [2, 3], "adaptive": True}),
    Case("max_pool2d_with_index", {"X": distinct(1, 3, 3, 4)}, {"ksize": [1, 1], "global_pooling": True}),
    Case("max_pool3d_with_index", {"X": distinct(1, 2, 3, 4, 4)}, {"ksize": [2, 2, 2], "strides": [1, 2, 2],
                                                                  "paddings": [1, 0, 1]}),
    Case("max_pool3d_with_index", {"X": distinct(1, 1, 3, 5, 4)}, {"ksize": [2, 3, 2], "adaptive": True}),
    Case("unpool", unpool_inputs((2, 2, 2, 3), (4, 6)),
         {"ksize": [2, 2], "strides": [2, 2], "output_size": [4, 6], "unpooling_type": "max"}),
    Case("unpool3d", unpool_inputs((1, 2, 1, 2, 2), (2, 4, 3)),
         {"ksize": [2, 2, 2], "strides": [2, 2, 2], "output_size": [2, 4, 3]}),
    Case("lp_pool2d", {"x": positive(2, 2, 4, 5)}, {"kernel_size": [2, 2], "strides": [2, 2], "norm_type": 2.0,
                                                    "pooling_type": "lp"}),
    Case("lp_pool2d", {"x": positive(1, 5, 4, 2)}, {"kernel_size": [3, 2], "strides": [1, 2], "norm_type": 3.5,
                                                    "ceil_mode": True, "paddings": [1, 0], "data_format": "NHWC"}),
    Case("fractional_max_pool2d", {"x": distinct(1, 2, 7, 6)}, {"output_size": [4, 3], "random_u": 0.3}),
    Case("fractional_max_pool2d", {"x": distinct(2, 1, 7, 7)}, {"output_size": [3, 4], "kernel_size": [2, 2],
                                                               "random_u": 0.6}),
    Case("fractional_max_pool3d", {"x": distinct(1, 1, 5, 6, 4)}, {"output_size": [3, 4, 2], "random_u": 0.45}),
    Case("fractional_max_pool3d", {"x": distinct(1, 2, 4, 5, 5)}, {"output_size": [2, 3, 3], "kernel_size": [2, 2, 2],
                                                                  "random_u": 0.7}),
]
