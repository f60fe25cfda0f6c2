"""Resize cases: nn.Upsample, UpsamplingNearest2D/Bilinear2D and F.interpolate in every mode, with
align_corners x align_mode, scale or size (as ints, a size tensor, a list with a tensor, a scale tensor),
channels first and last."""

import paddle.nn as nn
import paddle.nn.functional as F

from . import Case, data, ints


def up(name, shape, data_format=None, **options):
    """nn.Upsample on an input of ``shape``."""
    extra = {"data_format": data_format} if data_format else {}
    return Case(name, lambda: [nn.Upsample(**options, **extra)(data("x", *shape))])


CASES = [
    up("nearest_scale2", (1, 2, 3, 4), scale_factor=2, mode="nearest"),
    up("nearest_size_nhwc", (1, 3, 4, 2), data_format="NHWC", size=[5, 7], mode="nearest"),
    up("nearest_down_odd", (1, 2, 5, 7), scale_factor=0.5, mode="nearest"),
    up("nearest_3d", (1, 2, 2, 3, 4), data_format="NCDHW", scale_factor=[1.5, 2, 0.5], mode="nearest"),
    up("nearest_3d_ndhwc", (1, 2, 3, 2, 2), data_format="NDHWC", size=[3, 5, 4], mode="nearest"),
    up("bilinear_align_corners", (1, 2, 3, 4), size=[5, 6], mode="bilinear", align_corners=True),
    up("bilinear_mode0_fraction", (1, 2, 3, 4), scale_factor=1.7, mode="bilinear", align_mode=0),
    up("bilinear_mode1_down", (1, 2, 4, 6), size=[7, 3], mode="bilinear", align_mode=1),
    up("bilinear_nhwc", (2, 3, 2, 2), data_format="NHWC", scale_factor=2, mode="bilinear"),
    up("bilinear_same_size_scale", (1, 1, 4, 4), scale_factor=1.1, mode="bilinear"),
    up("bicubic_scale2", (1, 2, 3, 4), scale_factor=2, mode="bicubic"),
    up("bicubic_align_corners", (1, 1, 4, 3), size=[7, 5], mode="bicubic", align_corners=True),
    up("bicubic_nhwc_down", (1, 6, 5, 2), data_format="NHWC", size=[4, 3], mode="bicubic"),
    up("linear_mode0", (2, 2, 4), data_format="NCW", scale_factor=2.5, mode="linear", align_mode=0),
    up("linear_align_corners", (1, 3, 4), data_format="NCW", size=[9], mode="linear", align_corners=True),
    up("linear_nwc_mode1", (1, 5, 2), data_format="NWC", size=[3], mode="linear", align_mode=1),
    up("trilinear_mode0", (1, 2, 2, 3, 2), data_format="NCDHW", scale_factor=2, mode="trilinear", align_mode=0),
    up("trilinear_align_corners", (1, 1, 3, 2, 3), data_format="NCDHW", size=[4, 4, 5], mode="trilinear",
       align_corners=True),
    up("trilinear_ndhwc_mode1", (1, 2, 3, 4, 2), data_format="NDHWC", scale_factor=[1.5, 1, 0.75], mode="trilinear"),
    Case("upsampling_nearest2d", lambda: [nn.UpsamplingNearest2D(size=[6, 8])(data("x", 1, 2, 3, 3))]),
    Case("upsampling_bilinear2d", lambda: [nn.UpsamplingBilinear2D(scale_factor=2)(data("x", 1, 2, 3, 2))]),
    Case("size_list_with_tensor", lambda: [F.interpolate(data("x", 1, 2, 3, 4), size=[ints("h", [5]), 6],
                                                         mode="bilinear", align_corners=False)]),
    Case("size_tensor", lambda: [F.interpolate(data("x", 1, 2, 3, 4), size=ints("hw", [5, 2]), mode="nearest")]),
    Case("scale_tensor", lambda: [F.interpolate(data("x", 1, 2, 3, 4), scale_factor=data("s", grad=False,
                                                                                          dtype="float32", value=[1.5]),
                                                mode="bilinear", align_corners=False, align_mode=0)]),
    Case("scale_tensor_bicubic", lambda: [F.interpolate(data("x", 1, 1, 3, 4), scale_factor=data(
        "s", grad=False, dtype="float32", value=[2.0, 0.75]), mode="bicubic")]),
]
