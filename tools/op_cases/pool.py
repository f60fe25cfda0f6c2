"""Pooling layers with masks and their inverses: MaxPool1D/2D/3D(return_mask), adaptive max pooling, MaxUnPool1D/
2D/3D (also over overlapping windows, where one input cell is the maximum of several), LPPool1D/2D, fractional
max pooling with a fixed random_u. Max pooling inputs are distinct values (no ties)."""

import paddle.nn as nn
import paddle.nn.functional as F

from . import Case, data


def distinct(*shape):
    return data("x", *shape, kind="distinct")


def unpooled(pool, unpool, shape):
    out, mask = pool(distinct(*shape))
    return [unpool(out, mask)]


CASES = [
    Case("max_pool2d_mask", lambda: list(nn.MaxPool2D(2, 2, return_mask=True)(distinct(2, 2, 4, 5)))[:1]),
    Case("max_pool2d_mask_pad_ceil", lambda: list(nn.MaxPool2D(3, 2, padding=1, ceil_mode=True, return_mask=True)(
        distinct(1, 2, 6, 7)))[:1]),
    Case("max_pool1d_mask", lambda: list(nn.MaxPool1D(3, 2, padding=1, return_mask=True)(distinct(2, 3, 8)))[:1]),
    Case("max_pool3d_mask", lambda: list(nn.MaxPool3D(2, [1, 2, 2], padding=[1, 0, 1], return_mask=True)(
        distinct(1, 2, 3, 4, 4)))[:1]),
    Case("adaptive_max_pool2d", lambda: [F.adaptive_max_pool2d(distinct(1, 2, 5, 7), [3, 2])]),
    Case("adaptive_max_pool2d_mask", lambda: list(nn.AdaptiveMaxPool2D([2, 3], return_mask=True)(
        distinct(2, 1, 5, 8)))[:1]),
    Case("adaptive_max_pool1d", lambda: [nn.AdaptiveMaxPool1D(3)(distinct(1, 2, 7))]),
    Case("adaptive_max_pool3d", lambda: [nn.AdaptiveMaxPool3D([2, 3, 2])(distinct(1, 2, 3, 5, 4))]),
    Case("max_unpool2d", lambda: unpooled(nn.MaxPool2D(2, 2, return_mask=True), nn.MaxUnPool2D(2, 2),
                                          (2, 2, 4, 6))),
    Case("max_unpool2d_output_size", lambda: unpooled(nn.MaxPool2D(2, 2, return_mask=True),
                                                      nn.MaxUnPool2D(2, 2, output_size=[5, 7]), (1, 2, 5, 7))),
    Case("max_unpool1d", lambda: unpooled(nn.MaxPool1D(2, 2, return_mask=True), nn.MaxUnPool1D(2, 2), (2, 3, 8))),
    Case("max_unpool3d", lambda: unpooled(nn.MaxPool3D(2, 2, return_mask=True), nn.MaxUnPool3D(2, 2),
                                          (1, 2, 2, 4, 4))),
    Case("max_unpool2d_overlapping", lambda: unpooled(nn.MaxPool2D(3, 1, return_mask=True), nn.MaxUnPool2D(3, 1),
                                                      (1, 1, 4, 4)),
         note="windows overlap: one input cell is the maximum of several, so Indices repeat"),
    Case("lp_pool2d", lambda: [nn.LPPool2D(2, 2, 2)(data("x", 2, 2, 4, 5, kind="positive"))], dtype="float32"),
    Case("lp_pool2d_ceil_nhwc", lambda: [nn.LPPool2D(3.5, [3, 2], [1, 2], ceil_mode=True, data_format="NHWC")(
        data("x", 1, 5, 4, 2, kind="positive"))], dtype="float32"),
    Case("lp_pool1d", lambda: [nn.LPPool1D(3, 3, 2)(data("x", 2, 2, 7, kind="positive"))], dtype="float32"),
    Case("fractional_max_pool2d", lambda: [F.fractional_max_pool2d(distinct(1, 2, 7, 6), [4, 3], random_u=0.3)]),
    Case("fractional_max_pool2d_kernel", lambda: list(nn.FractionalMaxPool2D(
        [3, 4], kernel_size=2, random_u=0.6, return_mask=True)(distinct(2, 1, 7, 7)))[:1]),
    Case("fractional_max_pool3d", lambda: [nn.FractionalMaxPool3D([3, 4, 2], random_u=0.45)(distinct(1, 1, 5, 6, 4))]),
]
