"""Rows: Paddle 1.x detection and vision ops still registered in 3.3.1 (anchor_generator, box_clip,
bipartite_match, generate_proposals, collect_fpn_proposals, multiclass_nms, affine_channel, shuffle_channel,
add_position_encoding). Paddle 3.3.1 has no API writing them: each row appends the op itself (legacy_shim), as
Paddle 1.x's fluid.layers did."""

import paddle

from .legacy_shim import _outputs, append
from .spec import const, f, given, seq, table

IM_INFO = [[20.0, 30.0, 2.0], [40.0, 30.0, 1.5]]   # the second image's height / scale rounds up (26.67)
MATCH_OUTPUTS = {"ColToRowMatchIndices": "int32", "ColToRowMatchDist": "float32"}
# three rows and two of four columns tied at 0.9; 0.3 ties too; row 2's 0.0 is no overlap
DIST = [[0.5, 0.9, 0.9, 0.2], [0.9, 0.1, 0.9, 0.6], [0.0, 0.3, 0.3, 0.3], [0.4, 0.9, 0.05, 0.7],
        [0.9, 0.2, 0.5, 1e-7]]


def _anchors(x, **attrs):
    anchors, variances = _outputs("anchor_generator", {"Input": x}, {"Anchors": x.dtype, "Variances": x.dtype}, attrs)
    return paddle.concat([anchors.reshape([-1]), variances.reshape([-1])])


def _matched(dist, **attrs):
    """Per column, the sums over instances of the matched rows, the distances and their products (Paddle declares
    the outputs [rows, columns], though they are [instances, columns])."""
    indices, distances = _outputs("bipartite_match", {"DistMat": dist}, MATCH_OUTPUTS, attrs)
    rows = indices.astype(dist.dtype)
    return paddle.concat([rows.sum(axis=0), distances.sum(axis=0), (rows * distances).sum(axis=0)])

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

BOXES = table(
    "detection_v1",
    ("anchor_generator", lambda x: _anchors(x, anchor_sizes=[32.0, 64.0], aspect_ratios=[0.5, 1.0, 2.0],
                                            variances=[0.1, 0.1, 0.2, 0.2], stride=[16.0, 8.0]), const(1, 2, 2, 3)),
    ("anchor_generator_offset", lambda x: _anchors(x, anchor_sizes=[24.0], aspect_ratios=[1.5, 0.7],
                                                   variances=[1.0, 1.0, 1.0, 1.0], stride=[10.0, 12.0],
                                                   offset=0.3), const(2, 1, 3, 2)),
    ("box_clip", lambda boxes, info: append("box_clip", {"Input": boxes * 20.0, "ImInfo": info}, out_slot="Output"),
     seq(4, lengths=(2, 3)), given(IM_INFO, "float32")),
    ("bipartite_match", lambda dist: _matched(dist), given(DIST[:3], "float32")),
    ("bipartite_match_per_prediction", lambda dist: _matched(dist, match_type="per_prediction", dist_threshold=0.25),
     given(DIST, "float32")),
    # negative distances are no overlap
    ("bipartite_match_lod", lambda dist: _matched(dist, match_type="per_prediction", dist_threshold=0.6),
     seq(4, lengths=(3, 0, 2), grad=False)),
)

ROWS = VISION + BOXES
