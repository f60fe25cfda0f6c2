"""Dropout layers in training mode: Dropout2D/3D (whole channels), Dropout along an axis, AlphaDropout and
FeatureAlphaDropout. They draw with uniform_random, so gradc cannot reproduce Paddle's values: the fixture
records the structure every draw has (which factor kept units get, which axes share one draw)."""

import paddle.nn as nn

from . import Case, data

ALPHA_P = 0.3
ALPHA_SCALE = ((1 - ALPHA_P) * (1 + ALPHA_P * 1.6732632423543772 ** 2 * 1.0507009873554805 ** 2)) ** -0.5

CASES = [
    Case("dropout2d_train", lambda: [nn.Dropout2D(0.5)(data("x", 2, 3, 4, 4))],
         random={"scale": 2.0, "shared_axes": [2, 3]}),
    Case("dropout3d_train", lambda: [nn.Dropout3D(0.4)(data("x", 2, 3, 2, 2, 2))],
         random={"scale": 1 / 0.6, "shared_axes": [2, 3, 4]}),
    Case("dropout_axis_train", lambda: [nn.Dropout(0.5, axis=1)(data("x", 3, 8))],
         random={"scale": 2.0, "shared_axes": [0]}),
    Case("alpha_dropout_train", lambda: [nn.AlphaDropout(ALPHA_P)(data("x", 3, 4))],
         random={"scale": ALPHA_SCALE, "shared_axes": []}),
    Case("feature_alpha_dropout_train", lambda: [nn.FeatureAlphaDropout(ALPHA_P)(data("x", 2, 3, 2, 2))],
         random={"scale": ALPHA_SCALE, "shared_axes": [2, 3]}),
]
