"""Padding layers in every mode (constant with a value, reflect, replicate, circular), 1-D/2-D/3-D paddings,
channels first and last, pads as large as the input allows; F.pad over every dim (the pad op)."""

import paddle.nn as nn
import paddle.nn.functional as F

from . import Case, data


def pad(name, layer, shape, *args, **options):
    return Case(name, lambda: [layer(*args, **options)(data("x", *shape))])


CASES = [
    pad("pad1d_constant_value", nn.Pad1D, (2, 3, 4), [2, 1], mode="constant", value=1.5),
    pad("pad1d_reflect_widest", nn.Pad1D, (1, 2, 4), [3, 3], mode="reflect"),
    pad("pad1d_replicate_nlc", nn.Pad1D, (2, 5, 3), [4, 1], mode="replicate", data_format="NLC"),
    pad("pad1d_circular", nn.Pad1D, (1, 2, 5), [5, 2], mode="circular"),
    pad("pad2d_reflect", nn.Pad2D, (1, 2, 3, 4), [1, 3, 2, 0], mode="reflect"),
    pad("pad2d_replicate_nhwc", nn.Pad2D, (1, 3, 2, 2), [2, 0, 1, 3], mode="replicate", data_format="NHWC"),
    pad("pad2d_circular", nn.Pad2D, (2, 1, 3, 3), [3, 1, 0, 2], mode="circular"),
    pad("zero_pad2d", nn.ZeroPad2D, (1, 2, 2, 3), [1, 0, 2, 1]),
    pad("pad3d_constant", nn.Pad3D, (1, 2, 2, 2, 3), [1, 0, 0, 2, 1, 1], mode="constant", value=-0.5),
    pad("pad3d_reflect_ndhwc", nn.Pad3D, (1, 3, 3, 2, 2), [1, 1, 0, 2, 2, 1], mode="reflect", data_format="NDHWC"),
    pad("pad3d_replicate", nn.Pad3D, (1, 1, 2, 3, 2), [3, 0, 1, 1, 0, 4], mode="replicate"),
    pad("pad3d_circular", nn.Pad3D, (1, 2, 2, 2, 3), [2, 3, 1, 0, 2, 2], mode="circular"),
    Case("functional_pad_every_dim", lambda: [F.pad(data("x", 2, 3), [1, 0, 2, 1], value=0.25)]),
]
