"""Rows: Paddle 1.x detection and vision ops still registered in 3.3.1 (anchor_generator, box_clip,
bipartite_match, generate_proposals, collect_fpn_proposals, multiclass_nms, affine_channel, shuffle_channel,
add_position_encoding). Paddle 3.3.1 has no API writing them: each row appends the op itself (legacy_shim), as
Paddle 1.x's fluid.layers did."""

from .legacy_shim import append
from .spec import f, seq, table

VISION = table(
    "detection_v1",
    ("affine_channel_nchw", lambda x, scale, bias: append("affine_channel", {"X": x, "Scale": scale, "Bias": bias},
                                                          {"data_layout": "NCHW"}), f(2, 3, 2, 2), f(3), f(3)),
    ("affine_channel_nhwc", lambda x, scale, bias: append("affine_channel", {"X": x, "Scale": scale, "Bias": bias},
                                                          {"data_layout": "NHWC"}), f(2, 2, 3, 4), f(4), f(4)),
    ("affine_channel_any_layout", lambda x, scale, bias: append("affine_channel", {
        "X": x, "Scale": scale, "Bias": bias}), f(3, 2, 5), f(5), f(5)),
    ("shuffle_channel", lambda x: append("shuffle_channel", {"X": x}, {"group": 3}), f(2, 6, 2, 3)),
    ("add_position_encoding", lambda x: append("add_position_encoding", {"X": x}, {"alpha": 0.5, "beta": 2.0}),
     f(2, 5, 8)),
    ("add_position_encoding_lod", lambda x: append("add_position_encoding", {"X": x}, {"alpha": 1.5, "beta": 0.7}),
     seq(6, lengths=(2, 4))),
)

ROWS = VISION
