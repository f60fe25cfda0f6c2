"""Cases for the resize ops: every method x align_corners x align_mode, scale or size, the size and scale
inputs, channels first and last."""

import numpy as np

from . import Case, rng

r = rng(11)


def randn(*shape):
    return r.standard_normal(shape)


def resize(op, method, x, **attrs):
    return Case(op, {"X": x}, {"interp_method": method, **attrs})


CASES = [
    resize("linear_interp_v2", "linear", randn(2, 2, 4), out_w=7, align_corners=False, align_mode=0),
    resize("linear_interp_v2", "linear", randn(1, 3, 5), out_w=3, align_corners=True),
    resize("linear_interp_v2", "linear", randn(1, 4, 2), scale=[2.5], align_corners=False, data_layout="NHWC"),
    resize("bilinear_interp_v2", "bilinear", randn(1, 2, 3, 4), out_h=5, out_w=6, align_corners=True),
    resize("bilinear_interp_v2", "bilinear", randn(1, 2, 3, 4), scale=[1.7, 1.7], align_corners=False, align_mode=0),
    resize("bilinear_interp_v2", "bilinear", randn(2, 3, 4, 2), out_h=2, out_w=5, align_corners=False,
           data_layout="NHWC"),
    resize("bicubic_interp_v2", "bicubic", randn(1, 2, 3, 4), scale=[2.0, 1.5], align_corners=False),
    resize("bicubic_interp_v2", "bicubic", randn(1, 1, 4, 3), out_h=3, out_w=7, align_corners=True),
    resize("trilinear_interp_v2", "trilinear", randn(1, 2, 2, 3, 2), scale=[2.0, 1.5, 2.0], align_corners=False,
           align_mode=0),
    resize("trilinear_interp_v2", "trilinear", randn(1, 2, 3, 2, 2), out_d=2, out_h=4, out_w=3, align_corners=True,
           data_layout="NHWC"),
    resize("nearest_interp_v2", "nearest", randn(1, 2, 3, 4), out_h=5, out_w=7, align_corners=False),
    resize("nearest_interp_v2", "nearest", randn(1, 2, 5, 4), scale=[0.5, 1.5], align_corners=True),
    resize("nearest_interp_v2", "nearest", randn(1, 2, 2, 3, 2), out_d=3, out_h=2, out_w=4, align_corners=False,
           data_layout="NHWC"),
    Case("bilinear_interp_v2", {"X": randn(1, 2, 3, 3), "SizeTensor": [np.array([4], np.int32),
                                                                       np.array([2], np.int32)]},
         {"interp_method": "bilinear", "out_h": 9, "out_w": 9, "align_corners": False}),
    Case("bicubic_interp_v2", {"X": randn(1, 1, 3, 4), "OutSize": np.array([5, 2], np.int32)},
         {"interp_method": "bicubic", "align_corners": False}),
    Case("trilinear_interp_v2", {"X": randn(1, 1, 2, 2, 3), "Scale": np.array([1.5], np.float32)},
         {"interp_method": "trilinear", "align_corners": False, "align_mode": 1}),
]
