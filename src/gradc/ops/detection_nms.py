"""The selections of detection models: non-maximum suppression (nms, matrix_nms, multiclass_nms3), RPN proposals
(generate_proposals_v2) and their distribution over FPN levels (distribute_fpn_proposals). How many boxes they keep
depends on the data, so their outputs have -1 dims, as Paddle declares them.

Where Paddle's kernel writes a LoD (boxes per image) on an output, gradc writes the count outputs instead (RoisNum,
NmsRoisNum, RpnRoisNum, MultiLevelRoIsNum, int32, one count per image); an input Paddle reads a LoD from
without its count slot (multiclass_nms3's 2-D Scores, distribute_fpn_proposals's FpnRois) is one image.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop
from .detection import last_dim, product, rank_check

POLYGON_SIZES = (8, 16, 24, 32)   # multiclass_nms3's polygon boxes: 4 to 16 corners


def _counts(ctx, slot: str) -> None:
    shape = ctx.shape(slot)
    if shape is not None and len(shape) != 1:
        ctx.fail(f"{slot} must be 1-D (boxes per image), got shape {shape}")
    if ctx.dtype(slot) not in (None, VarType.INT32, VarType.INT64):
        ctx.fail(f"{slot} must be int32 or int64")


def _selected(ctx, box_size: int = 4) -> dict:
    """Out [-1, 6] rows (label, score, x1, y1, x2, y2; a polygon's coordinates: [-1, 2 + box_size]) of the scores'
    dtype, and each row's box in Index."""
    width = 2 + box_size if box_size >= 0 else -1
    return {"Out": ([-1, width], ctx.dtype("Scores")), "Index": ([-1, 1], VarType.INT32)}


# ---------------------------------------------------------------- nms
def _nms_infer(ctx):
    boxes = rank_check(ctx, "Boxes", 2, "[N, 4]")
    last_dim(ctx, "Boxes", boxes, 4)
    return {"KeepBoxesIdxs": ([-1], VarType.INT64)}


defop("nms", ["Boxes"], ["KeepBoxesIdxs"], attrs={"iou_threshold": 1.0}, infer=_nms_infer, grad=NO_GRAD)


# ---------------------------------------------------------------- matrix_nms, multiclass_nms3
def _batched_boxes(ctx, polygons: bool = False) -> tuple[list[int], list[int]]:
    """BBoxes [N, M, 4] (with ``polygons``, also [N, M, 8, 16, 24 or 32]) and Scores [N, C, M], checked against each
    other."""
    boxes = rank_check(ctx, "BBoxes", 3, "[N, M, 4]")
    scores = rank_check(ctx, "Scores", 3, "[N, C, M]")
    if not polygons or boxes[-1] not in (*POLYGON_SIZES, -1):
        last_dim(ctx, "BBoxes", boxes, 4)
    for b, s, what in ((boxes[0], scores[0], "batch size"), (boxes[1], scores[2], "box count")):
        if b >= 0 and s >= 0 and b != s:
            ctx.fail(f"BBoxes {boxes} and Scores {scores} (C classes) disagree on the {what}")
    return boxes, scores


def _check_nms_attrs(ctx) -> None:
    if ctx.attr("background_label") < -1:
        ctx.fail(f"background_label must be a class or -1 (none), got {ctx.attr('background_label')}")
    if any(ctx.attr(name) < -1 for name in ("nms_top_k", "keep_top_k")):
        ctx.fail(f"nms_top_k and keep_top_k must be >= -1 (-1: all), got {ctx.attr('nms_top_k')} and "
                 f"{ctx.attr('keep_top_k')}")


def _matrix_nms_infer(ctx):
    _batched_boxes(ctx)
    _check_nms_attrs(ctx)
    return {**_selected(ctx), "RoisNum": ([-1], VarType.INT32)}


defop("matrix_nms", ["BBoxes", "Scores"], ["Out", "Index", "RoisNum?"], infer=_matrix_nms_infer, grad=NO_GRAD,
      attrs={"score_threshold": 0.0, "nms_top_k": -1, "keep_top_k": -1, "post_threshold": 0.0,
             "use_gaussian": False, "gaussian_sigma": 2.0, "background_label": 0, "normalized": True})


def _multiclass_nms3_infer(ctx):
    scores = ctx.shape("Scores")
    if scores is not None and len(scores) == 2:   # [M, C] scores of [M, C, 4] boxes, images counted by RoisNum
        boxes = rank_check(ctx, "BBoxes", 3, "[M, C, 4] with 2-D Scores [M, C]")
        last_dim(ctx, "BBoxes", boxes, 4)
        if any(b >= 0 and s >= 0 and b != s for b, s in zip(boxes, scores)):
            ctx.fail(f"BBoxes {boxes} must be [M, C, 4] for Scores {scores}")
        size = 4
    else:
        size = _batched_boxes(ctx, polygons=True)[0][-1]
    if ctx.has("RoisNum"):
        _counts(ctx, "RoisNum")
    _check_nms_attrs(ctx)
    if ctx.attr("nms_eta") <= 0:
        ctx.fail(f"nms_eta must be > 0, got {ctx.attr('nms_eta')}")
    return {**_selected(ctx, size), "NmsRoisNum": ([-1], VarType.INT32)}


defop("multiclass_nms3", ["BBoxes", "Scores", "RoisNum?"], ["Out", "Index", "NmsRoisNum?"],
      infer=_multiclass_nms3_infer, grad=NO_GRAD,
      attrs={"score_threshold": 0.0, "nms_top_k": -1, "keep_top_k": -1, "nms_threshold": 0.3, "normalized": True,
             "nms_eta": 1.0, "background_label": 0})


# ---------------------------------------------------------------- generate_proposals_v2
def proposals_infer(ctx, image_slot: str, image_row: list[str]) -> dict:
    """The shapes of generate_proposals_v2 (ImShape [N, 2]) and of generate_proposals v1 (ImInfo [N, 3])."""
    n, a, h, w = rank_check(ctx, "Scores", 4, "[N, A, H, W]")
    deltas = rank_check(ctx, "BboxDeltas", 4, "[N, 4A, H, W]")
    if any(x >= 0 and y >= 0 and x != y for x, y in zip([n, 4 * a if a >= 0 else -1, h, w], deltas)):
        ctx.fail(f"BboxDeltas {deltas} must be [N, 4A, H, W] for Scores {ctx.shape('Scores')}")
    form = f"[N, {len(image_row)}] ({', '.join(image_row)})"
    images = rank_check(ctx, image_slot, 2, form)
    if images[1] not in (len(image_row), -1):
        ctx.fail(f"{image_slot} must be {form}, got {images}")
    for slot in ("Anchors", "Variances"):
        shape = ctx.shape(slot)
        if shape is not None and (shape[-1:] != [4] or product(*shape) not in (-1, product(h, w, a, 4))):
            ctx.fail(f"{slot} must hold one box per anchor and position ([H, W, A, 4]), got shape {shape}")
    if ctx.attr("eta") <= 0:
        ctx.fail(f"eta must be > 0, got {ctx.attr('eta')}")
    dtype = ctx.dtype("Scores")
    return {"RpnRois": ([-1, 4], dtype), "RpnRoiProbs": ([-1, 1], dtype), "RpnRoisNum": ([-1], VarType.INT32)}


defop("generate_proposals_v2", ["Scores", "BboxDeltas", "ImShape", "Anchors", "Variances"],
      ["RpnRois", "RpnRoiProbs", "RpnRoisNum?"], grad=NO_GRAD,
      infer=lambda ctx: proposals_infer(ctx, "ImShape", ["height", "width"]),
      attrs={"pre_nms_topN": 6000, "post_nms_topN": 1000, "nms_thresh": 0.5, "min_size": 0.1, "eta": 1.0,
             "pixel_offset": True})


# ---------------------------------------------------------------- distribute_fpn_proposals
MAX_LEVELS = 2048   # a float64 scale spans fewer powers of 2: more levels could only stay empty


def _distribute_fpn_infer(ctx):
    rois = rank_check(ctx, "FpnRois", 2, "[R, 4]")
    last_dim(ctx, "FpnRois", rois, 4)
    if ctx.has("RoisNum"):
        _counts(ctx, "RoisNum")
    levels = ctx.attr("max_level") - ctx.attr("min_level") + 1
    if levels < 1 or ctx.attr("min_level") < 0:
        ctx.fail(f"the levels [min_level, max_level] = [{ctx.attr('min_level')}, {ctx.attr('max_level')}] are empty")
    if levels > MAX_LEVELS:
        ctx.fail(f"the levels [min_level, max_level] = [{ctx.attr('min_level')}, {ctx.attr('max_level')}] are "
                 f"{levels}, one output each; gradc takes at most {MAX_LEVELS}")
    if ctx.attr("refer_scale") <= 0:
        ctx.fail(f"refer_scale must be > 0, got {ctx.attr('refer_scale')}")
    # an op being built has no outputs yet: it gets them all; a program's op one var per level in each it fills
    given = {slot: len(ctx.op.outputs.get(slot, ())) for slot in ("MultiFpnRois", "MultiLevelRoIsNum")}
    building = not any(given.values())
    for slot, count in given.items():
        if count not in (0, levels) or (count == 0 and slot == "MultiFpnRois" and not building):
            ctx.fail(f"{slot} must hold one var per level ({levels} levels), got {count}")
    counts = levels if building or given["MultiLevelRoIsNum"] else 0
    return {"MultiFpnRois": [([-1, 4], ctx.dtype("FpnRois"))] * levels, "RestoreIndex": ([-1, 1], VarType.INT32),
            "MultiLevelRoIsNum": [([-1], VarType.INT32)] * counts}


defop("distribute_fpn_proposals", ["FpnRois", "RoisNum?"], ["MultiFpnRois[]", "RestoreIndex", "MultiLevelRoIsNum[]?"],
      infer=_distribute_fpn_infer, grad=NO_GRAD,
      attrs={"min_level": 2, "max_level": 5, "refer_level": 4, "refer_scale": 224, "pixel_offset": True})
