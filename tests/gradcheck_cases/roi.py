"""Cases for gradc.ops.roi: roi_align (aligned or not, fixed and adaptive sampling, boxes partly off the image,
an aligned box smaller than a pixel, one image without RoisNum), roi_pool (distinct values: no ties; rounded box
corners, bins clipped by the image) and psroi_pool (several output channels, a scale), and the grad ops' makers.
All are linear in X, roi_pool piecewise: X's gradient is the adjoint of the pixels and weights read."""

import numpy as np

from . import Case, rng
from .second_order import distinct, second_order

r = rng(61)

# two boxes on image 0, one on image 1, as x1, y1, x2, y2; the second runs off the image, the third is thin
BOXES = np.array([[0.4, 0.6, 3.1, 2.9], [2.2, -1.3, 6.4, 2.0], [0.7, 1.5, 2.6, 2.1]])
COUNTS = np.array([2, 1], np.int32)
SMALL = np.array([[1.2, 1.1, 1.8, 1.5], [0.3, 2.2, 3.6, 3.9]])   # the first narrower than a pixel


def randn(*shape):
    return r.standard_normal(shape)


def align(x, boxes, counts=COUNTS, **attrs):
    inputs = {"X": x, "ROIs": boxes} | ({} if counts is None else {"RoisNum": counts})
    return Case("roi_align", inputs, attrs, wrt=["X"])


def pool(op, x, boxes, counts=COUNTS, **attrs):
    inputs = {"X": x, "ROIs": boxes} | ({} if counts is None else {"RoisNum": counts})
    return Case(op, inputs, attrs, wrt=["X"])


CASES = [
    align(randn(2, 3, 5, 5), BOXES, pooled_height=2, pooled_width=2),
    align(randn(2, 2, 5, 6), BOXES, pooled_height=2, pooled_width=3, spatial_scale=0.8, sampling_ratio=2),
    align(randn(2, 2, 5, 5), BOXES, pooled_height=3, pooled_width=2, aligned=True),
    align(randn(1, 2, 5, 5), SMALL, counts=np.array([2], np.int64), pooled_height=2, pooled_width=2, aligned=True),
    align(randn(1, 2, 4, 5), SMALL, counts=None, pooled_height=1, pooled_width=2, sampling_ratio=3),
    pool("roi_pool", distinct(2, 3, 5, 5), BOXES, pooled_height=2, pooled_width=2),
    pool("roi_pool", distinct(2, 2, 6, 5), BOXES * 2, pooled_height=2, pooled_width=3, spatial_scale=0.5),
    pool("roi_pool", distinct(1, 2, 5, 5), SMALL, counts=None, pooled_height=3, pooled_width=3),
    pool("psroi_pool", randn(2, 8, 5, 5), BOXES, output_channels=2, pooled_height=2, pooled_width=2),
    pool("psroi_pool", randn(2, 18, 6, 5), BOXES * 2, output_channels=2, pooled_height=3, pooled_width=3,
         spatial_scale=0.5),
    pool("psroi_pool", randn(1, 4, 5, 5), SMALL, counts=None, output_channels=1, pooled_height=2, pooled_width=2),
    second_order("roi_align", {"X": randn(2, 2, 5, 5), "ROIs": BOXES, "RoisNum": COUNTS},
                 {"pooled_height": 2, "pooled_width": 2, "aligned": True}, wrt=["X"]),
    second_order("psroi_pool", {"X": randn(2, 8, 5, 5), "ROIs": BOXES, "RoisNum": COUNTS},
                 {"output_channels": 2, "pooled_height": 2, "pooled_width": 2}, wrt=["X"]),
    second_order("roi_pool", {"X": distinct(2, 2, 5, 5), "ROIs": BOXES, "RoisNum": COUNTS},
                 {"pooled_height": 2, "pooled_width": 2}, wrt=["X"]),
    second_order("roi_pool", {"X": distinct(1, 2, 5, 5), "ROIs": SMALL}, {"pooled_height": 2, "pooled_width": 3},
                 wrt=["X"]),
]
