"""Rearranging vision layers: PixelShuffle, PixelUnshuffle, ChannelShuffle (both layouts), Unfold and Fold
with strides, asymmetric paddings and dilations."""

import paddle.nn as nn

from . import Case, data

CASES = [
    Case("pixel_shuffle", lambda: [nn.PixelShuffle(2)(data("x", 1, 8, 2, 3))]),
    Case("pixel_shuffle_nhwc", lambda: [nn.PixelShuffle(3, data_format="NHWC")(data("x", 2, 2, 3, 9))]),
    Case("pixel_unshuffle", lambda: [nn.PixelUnshuffle(2)(data("x", 1, 2, 4, 6))]),
    Case("pixel_unshuffle_nhwc", lambda: [nn.PixelUnshuffle(3, data_format="NHWC")(data("x", 1, 6, 3, 2))]),
    Case("channel_shuffle", lambda: [nn.ChannelShuffle(3)(data("x", 2, 6, 2, 2))]),
    Case("channel_shuffle_nhwc", lambda: [nn.ChannelShuffle(2, data_format="NHWC")(data("x", 1, 2, 3, 4))]),
    Case("unfold", lambda: [nn.Unfold([2, 3])(data("x", 2, 2, 4, 5))]),
    Case("unfold_stride_pad_dilation", lambda: [nn.Unfold([2, 2], strides=[2, 1], paddings=[1, 0, 2, 1],
                                                          dilations=[1, 2])(data("x", 1, 2, 5, 5))]),
    Case("fold", lambda: [nn.Fold([3, 4], [2, 2])(data("x", 2, 8, 6))]),
    Case("fold_stride_pad", lambda: [nn.Fold([4, 5], [2, 3], strides=2, paddings=1)(data("x", 1, 12, 9))]),
]
