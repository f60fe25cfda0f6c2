"""Optional inputs of gradc.ops.gpu_build: nansum's axes as tensors, which override axis (NaNs in x count as 0 either
way), and the bias of the depthwise convolutions, added on the channel dim (without it: the plain convolution)."""

import numpy as np

from . import SlotCase

r = np.random.default_rng(5)
X = r.standard_normal((2, 3, 4))
X[0, 1, 2] = X[1, 0, 0] = np.nan
KEPT = np.where(np.isnan(X), 0.0, X)
IMAGE, FILTER, BIAS = r.standard_normal((1, 2, 3, 3)), r.standard_normal((4, 1, 1, 1)), r.standard_normal(4)
VOLUME, FILTER_3D = r.standard_normal((1, 2, 2, 2, 2)), r.standard_normal((2, 1, 1, 1, 1))
# a 1x1 depthwise filter with 2 outputs per channel: output channel o reads input channel o // 2 times FILTER[o]
PLANE = np.repeat(IMAGE, 2, axis=1) * FILTER.reshape(1, 4, 1, 1)

CASES = [
    SlotCase("nansum", "AxisTensor", {"x": X, "AxisTensor": np.array([2, 0], np.int64)},
             {"out": KEPT.sum(axis=(0, 2), keepdims=True)}, {"axis": [1], "keepdim": True}),
    SlotCase("nansum", "AxisTensorList",
             {"x": X, "AxisTensorList": [np.array([-1], np.int32), np.array([1], np.int32)]},
             {"out": KEPT.sum(axis=(1, 2), keepdims=True)}, {"axis": [0], "keepdim": True}),
    SlotCase("depthwise_conv2d_bias", "bias", {"input": IMAGE, "filter": FILTER, "bias": BIAS},
             {"out": PLANE + BIAS.reshape(1, 4, 1, 1)}, {"groups": 2}),
    SlotCase("depthwise_conv3d_bias", "bias", {"input": VOLUME, "filter": FILTER_3D, "bias": BIAS[:2]},
             {"out": VOLUME * FILTER_3D.reshape(1, 2, 1, 1, 1) + BIAS[:2].reshape(1, 2, 1, 1, 1)},
             {"groups": 2, "data_format": "NCDHW", "strides": [1, 1, 1], "paddings": [0, 0, 0],
              "dilations": [1, 1, 1]}),
]
