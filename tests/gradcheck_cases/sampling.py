"""Cases for the sampling ops: affine_grid 2-D and 3-D both align_corners ways (and its OutputShape input),
grid_sampler in every mode x padding_mode x align_corners, 4-D and 5-D, temporal_shift in both layouts.
Grid points stay off the pixel lattice and the clamps/folds (bilinear kinks) and off the rounding ties of
nearest; some lie outside [-1, 1] so padding matters."""

import numpy as np

from . import Case, rng

r = rng(29)


def randn(*shape):
    return r.standard_normal(shape)


def grid(*shape, size):
    """Grid points in [-1.3, 1.3] whose pixel positions (for every size in ``size``, both align_corners ways)
    keep 0.1 from integers and half-integers."""
    points = r.uniform(-1.3, 1.3, shape)
    while True:
        positions = [(points + 1) * s / 2 + shift for s in size for shift in (0, -0.5, 0.5)]
        near = np.logical_or.reduce([np.abs(p * 2 - np.round(p * 2)) < 0.2 for p in positions])
        if not near.any():
            return points
        points[near] = r.uniform(-1.3, 1.3, int(near.sum()))


def sampler(x, g, **attrs):
    return Case("grid_sampler", {"X": x, "Grid": g}, attrs)


SAMPLER_ATTRS = [dict(mode=mode, padding_mode=padding, align_corners=corners)
                 for mode in ("bilinear", "nearest") for padding in ("zeros", "border", "reflection")
                 for corners in (True, False)]

CASES = [
    Case("affine_grid", {"Theta": randn(2, 2, 3)}, {"output_shape": [2, 1, 3, 4], "align_corners": True}),
    Case("affine_grid", {"Theta": randn(2, 2, 3)}, {"output_shape": [2, 1, 1, 4], "align_corners": False}),
    Case("affine_grid", {"Theta": randn(1, 3, 4)}, {"output_shape": [1, 2, 2, 3, 2], "align_corners": False}),
    Case("affine_grid", {"Theta": randn(1, 2, 3), "OutputShape": np.array([1, 1, 2, 5], np.int32)},
         {"output_shape": [1, 1, 3, 3]}),
    *[sampler(randn(2, 2, 3, 4), grid(2, 3, 2, 2, size=(3, 4)), **attrs) for attrs in SAMPLER_ATTRS],
    *[sampler(randn(1, 2, 3, 2, 4), grid(1, 2, 2, 3, 3, size=(3, 2, 4)), **attrs) for attrs in SAMPLER_ATTRS[::3]],
    Case("temporal_shift", {"X": randn(6, 8, 2, 2)}, {"seg_num": 3, "shift_ratio": 0.25}),
    Case("temporal_shift", {"X": randn(4, 2, 3, 5)}, {"seg_num": 2, "shift_ratio": 0.4, "data_format": "NHWC"}),
]
