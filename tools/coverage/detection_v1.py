"""Rows: Paddle 1.x detection and vision ops still registered in 3.3.1 (anchor_generator, box_clip,
bipartite_match, generate_proposals, collect_fpn_proposals, multiclass_nms, affine_channel, shuffle_channel,
add_position_encoding). Paddle 3.3.1 has no API writing them: each row appends the op itself (legacy_shim), as
Paddle 1.x's fluid.layers did."""

import numpy as np
import paddle

from .legacy_shim import _outputs, append
from .spec import const, f, given, seq, table, unit
from .vision_ops import NMS_BOXES, NMS_SCORES, _like, _rpn_anchors

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
    # group^2 = C: Paddle's grad kernel shuffles dOut forward again, right only where the shuffle is its own inverse
    ("shuffle_channel", lambda x: append("shuffle_channel", {"X": x}, {"group": 2}), f(2, 4, 2, 3)),
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
    # one image: its PIR fixture is fed without the LoD, which gradc reads as one image too
    ("box_clip_one_image", lambda boxes, info: append("box_clip", {"Input": boxes * 20.0, "ImInfo": info},
                                                      out_slot="Output"), seq(4, lengths=(4,)),
     given(IM_INFO[1:], "float32")),
    ("bipartite_match", lambda dist: _matched(dist), given(DIST[:3], "float32")),
    ("bipartite_match_per_prediction", lambda dist: _matched(dist, match_type="per_prediction", dist_threshold=0.25),
     given(DIST, "float32")),
    # negative distances are no overlap
    ("bipartite_match_lod", lambda dist: _matched(dist, match_type="per_prediction", dist_threshold=0.6),
     seq(4, lengths=(3, 0, 2), grad=False)),
)


def _multiclass_nms(boxes, scores, **attrs):
    defaults = {"score_threshold": 0.1, "nms_top_k": -1, "keep_top_k": -1, "nms_threshold": 0.3,
                "normalized": True, "nms_eta": 1.0, "background_label": 0}
    return _outputs("multiclass_nms", {"BBoxes": boxes, "Scores": scores}, {"Out": scores.dtype},
                    defaults | attrs)[0] * 1.0


def _proposals(scores, deltas, info, **attrs):
    """Both outputs of generate_proposals (v1) as one vector."""
    anchors = _rpn_anchors().astype(scores.dtype)
    variances = paddle.full([4, 4, 2, 4], 0.5, scores.dtype)
    outputs = {"RpnRois": scores.dtype, "RpnRoiProbs": scores.dtype, "RpnRoisNum": "int32"}
    rois, probs, counts = _outputs("generate_proposals", {
        "Scores": scores, "BboxDeltas": deltas, "ImInfo": info, "Anchors": anchors, "Variances": variances},
        outputs, {"pre_nms_topN": 20, "post_nms_topN": 8, "nms_thresh": 0.5, "min_size": 0.1, "eta": 1.0} | attrs)
    return paddle.concat([rois.reshape([-1]), probs.reshape([-1]), counts.astype(scores.dtype)])


def _collected(rois, scores, post_nms_topN, counts=None):
    """collect_fpn_proposals' RoIs and counts as one vector."""
    inputs = {"MultiLevelRois": rois, "MultiLevelScores": scores}
    if counts is not None:
        inputs["MultiLevelRoIsNum"] = counts
    fpn_rois, rois_num = _outputs("collect_fpn_proposals", inputs, {"FpnRois": rois[0].dtype, "RoisNum": "int32"},
                                  {"post_nms_topN": post_nms_topN})
    return paddle.concat([fpn_rois.reshape([-1]), rois_num.astype(rois[0].dtype)])


SELECTIONS = table(
    "detection_v1",
    ("multiclass_nms", lambda s: _multiclass_nms(_like(NMS_BOXES, s), s, nms_top_k=4, keep_top_k=4),
     given(NMS_SCORES, "float32")),
    ("multiclass_nms_pixels_background", lambda s: _multiclass_nms(
        _like(NMS_BOXES, s) * 10.0, s, score_threshold=0.25, nms_threshold=0.6, nms_eta=0.9, normalized=False,
        background_label=1), given(NMS_SCORES, "float32")),
    ("multiclass_nms_none_kept", lambda s: _multiclass_nms(_like(NMS_BOXES, s), s, score_threshold=0.95).sum(),
     given(NMS_SCORES, "float32")),
    # Paddle reads the images from the boxes' LoD (the scores' alone is a segmentation fault)
    ("multiclass_nms_per_class_boxes_lod", lambda b, s: _multiclass_nms(b, s, keep_top_k=3, background_label=-1),
     seq(2, 4, lengths=(3, 2), grad=False), given(np.array(NMS_SCORES)[0, :2].T, "float32")),
    ("generate_proposals_v1", lambda s, d, info: _proposals(s, d, info), unit(2, 2, 4, 4), f(2, 8, 4, 4),
     given([[16.0, 16.0, 1.0], [14.0, 16.0, 2.0]], "float32")),
    ("generate_proposals_v1_min_size", lambda s, d, info: _proposals(s, d, info, min_size=5.0, nms_thresh=0.7,
                                                                     pre_nms_topN=0, post_nms_topN=5),
     unit(1, 2, 4, 4), f(1, 8, 4, 4), given([[16.0, 15.0, 0.5]], "float32")),
    ("collect_fpn_proposals", lambda r2, r3, s2, s3: _collected([r2, r3], [s2, s3], 4),
     seq(4, lengths=(2, 3), grad=False), seq(4, lengths=(1, 2), grad=False), seq(1, lengths=(2, 3), grad=False),
     seq(1, lengths=(1, 2), grad=False)),
    ("collect_fpn_proposals_rois_num", lambda r2, r3, s2, s3, n2, n3: _collected([r2, r3], [s2, s3], 10, [n2, n3]),
     const(4, 4), const(2, 4), given([[0.5], [0.7], [0.5], [0.9]], "float32"), given([[0.7], [0.2]], "float32"),
     given([3, 1], "int32"), given([0, 2], "int32")),
)

ROWS = VISION + BOXES + SELECTIONS
