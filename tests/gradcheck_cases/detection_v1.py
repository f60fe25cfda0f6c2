"""Cases for gradc.ops.detection_v1: affine_channel in both layouts (channel dim 1, or last for any other layout)
and ranks 2 to 4, shuffle_channel, add_position_encoding over a batch and over packed sequences (LoD); and the
second derivatives of their grad ops (gradc.ops.detection_v1_double)."""

from gradc import LoDTensor

from . import Case, rng
from .second_order import second_order

r = rng(83)


def randn(*shape):
    return r.standard_normal(shape)


CASES = [
    Case("affine_channel", {"X": randn(2, 3, 2, 2), "Scale": randn(3), "Bias": randn(3)}, {"data_layout": "NCHW"}),
    Case("affine_channel", {"X": randn(2, 2, 3, 4), "Scale": randn(4), "Bias": randn(4)}),
    Case("affine_channel", {"X": randn(3, 2, 5), "Scale": randn(5), "Bias": randn(5)}, {"data_layout": "NHWC"}),
    Case("affine_channel", {"X": randn(4, 3), "Scale": randn(3), "Bias": randn(3)}, {"data_layout": "NCHW"}),
    Case("shuffle_channel", {"X": randn(2, 6, 2, 3)}, {"group": 3}),
    Case("shuffle_channel", {"X": randn(1, 4, 3, 1)}, {"group": 1}),
    Case("add_position_encoding", {"X": randn(2, 3, 6)}, {"alpha": 0.5, "beta": 2.0}),
    Case("add_position_encoding", {"X": LoDTensor.from_lengths(randn(5, 4), [[2, 3]])}, {"alpha": -1.5}),
    second_order("affine_channel", {"X": randn(2, 3, 2, 2), "Scale": randn(3), "Bias": randn(3)},
                 {"data_layout": "NCHW"}),
    second_order("affine_channel", {"X": randn(2, 2, 3), "Scale": randn(3), "Bias": randn(3)}),
    second_order("shuffle_channel", {"X": randn(1, 6, 2, 2)}, {"group": 2}),
    second_order("add_position_encoding", {"X": randn(1, 4, 4)}, {"alpha": 3.0}),
]
