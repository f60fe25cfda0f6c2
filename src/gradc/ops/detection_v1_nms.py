"""Paddle 1.x selections of detection programs, whose outputs carry a LoD (boxes per image) where their successors
(gradc.ops.detection_nms) count boxes in outputs of their own: multiclass_nms (multiclass_nms3 without Index and
NmsRoisNum, multiclass_nms2 with Index), generate_proposals (generate_proposals_v2 with ImInfo [N, 3] (height,
width, scale) for ImShape, and the minimum size compared with a box's size over its image's scale) and
collect_fpn_proposals (the best RoIs of all FPN levels, grouped by image). How many boxes they keep depends on the
data, so their outputs have -1 dims. Paddle differentiates none of them.

Images are told apart by a LoD, as in Paddle: multiclass_nms's 2-D Scores [M, C] by the LoD of their BBoxes
[M, C, 4] (without one, a single image); collect_fpn_proposals's levels by MultiLevelRoIsNum when given, else by
each level's LoD.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop
from .detection import last_dim, rank_check
from .detection_nms import proposals_infer


def _multiclass_nms_infer(ctx):
    scores = ctx.shape("Scores")
    if scores is not None and len(scores) == 2:   # [M, C] scores of [M, C, 4] boxes, images told by the LoD
        boxes = rank_check(ctx, "BBoxes", 3, "[M, C, 4] with 2-D Scores [M, C]")
        if any(b >= 0 and s >= 0 and b != s for b, s in zip(boxes, scores)):
            ctx.fail(f"BBoxes {boxes} must be [M, C, 4] for Scores {scores}")
    else:
        boxes = rank_check(ctx, "BBoxes", 3, "[N, M, 4]")
        scores = rank_check(ctx, "Scores", 3, "[N, C, M]")
        if any(b >= 0 and s >= 0 and b != s for b, s in ((boxes[0], scores[0]), (boxes[1], scores[2]))):
            ctx.fail(f"BBoxes {boxes} must be [N, M, 4] for Scores {scores} [N, C, M]")
    last_dim(ctx, "BBoxes", boxes, 4)
    if ctx.attr("background_label") < -1:
        ctx.fail(f"background_label must be a class or -1 (none), got {ctx.attr('background_label')}")
    if ctx.attr("nms_top_k") < -1 or ctx.attr("keep_top_k") < -1:
        ctx.fail(f"nms_top_k and keep_top_k must be >= -1 (-1: all), got {ctx.attr('nms_top_k')} and "
                 f"{ctx.attr('keep_top_k')}")
    if ctx.attr("nms_eta") <= 0:
        ctx.fail(f"nms_eta must be > 0, got {ctx.attr('nms_eta')}")
    return {"Out": ([-1, 6], ctx.dtype("Scores"))}


MULTICLASS_NMS_ATTRS = {"score_threshold": 0.0, "nms_top_k": -1, "keep_top_k": -1, "nms_threshold": 0.3,
                        "normalized": True, "nms_eta": 1.0, "background_label": 0}
defop("multiclass_nms", ["BBoxes", "Scores"], ["Out"], infer=_multiclass_nms_infer, grad=NO_GRAD,
      lod_levels=lambda ctx: {"Out": 1}, attrs=MULTICLASS_NMS_ATTRS)
# Paddle 2.x's, which 3.3.1 no longer registers: multiclass_nms with Index, each row's box (as multiclass_nms3's)
defop("multiclass_nms2", ["BBoxes", "Scores"], ["Out", "Index"], grad=NO_GRAD, attrs=MULTICLASS_NMS_ATTRS,
      infer=lambda ctx: {**_multiclass_nms_infer(ctx), "Index": ([-1, 1], VarType.INT32)},
      lod_levels=lambda ctx: {"Out": 1, "Index": 1})


defop("generate_proposals", ["Scores", "BboxDeltas", "ImInfo", "Anchors", "Variances"],
      ["RpnRois", "RpnRoiProbs", "RpnRoisNum?"], grad=NO_GRAD,
      infer=lambda ctx: proposals_infer(ctx, "ImInfo", ["height", "width", "scale"]),
      lod_levels=lambda ctx: {"RpnRois": 1, "RpnRoiProbs": 1, "RpnRoisNum": 0},
      attrs={"pre_nms_topN": 6000, "post_nms_topN": 1000, "nms_thresh": 0.5, "min_size": 0.1, "eta": 1.0})


COUNT_DTYPES = (VarType.INT32, VarType.INT64)


def _collect_fpn_infer(ctx):
    levels = len(ctx.op.input("MultiLevelRois"))
    if not levels or len(ctx.op.input("MultiLevelScores")) != levels:
        ctx.fail(f"MultiLevelRois and MultiLevelScores must give one var per level each, got {levels} and "
                 f"{len(ctx.op.input('MultiLevelScores'))}")
    if ctx.has("MultiLevelRoIsNum") and len(ctx.op.input("MultiLevelRoIsNum")) != levels:
        ctx.fail(f"MultiLevelRoIsNum must give one var per level ({levels}), got "
                 f"{len(ctx.op.input('MultiLevelRoIsNum'))}")
    for i in range(levels):
        rois, scores = ctx.shape("MultiLevelRois", i), ctx.shape("MultiLevelScores", i)
        if rois is not None and (len(rois) != 2 or rois[1] not in (4, -1)):
            ctx.fail(f"MultiLevelRois[{i}] must be [R, 4], got shape {rois}")
        if scores is not None and (len(scores) != 2 or scores[1] not in (1, -1)):
            ctx.fail(f"MultiLevelScores[{i}] must be [R, 1], got shape {scores}")
        if ctx.has("MultiLevelRoIsNum") and ctx.dtype("MultiLevelRoIsNum", i) not in (None, *COUNT_DTYPES):
            ctx.fail(f"MultiLevelRoIsNum[{i}] must be int32 or int64 (RoIs per image)")
    if ctx.attr("post_nms_topN") < 0:
        ctx.fail(f"post_nms_topN must be >= 0, got {ctx.attr('post_nms_topN')}")
    return {"FpnRois": ([-1, 4], ctx.dtype("MultiLevelRois")), "RoisNum": ([-1], VarType.INT32)}


defop("collect_fpn_proposals", ["MultiLevelRois[]", "MultiLevelScores[]", "MultiLevelRoIsNum[]?"],
      ["FpnRois", "RoisNum?"], infer=_collect_fpn_infer, grad=NO_GRAD,
      lod_levels=lambda ctx: {"FpnRois": 1, "RoisNum": 0}, attrs={"post_nms_topN": 100})
