"""Paddle 1.x box ops of Faster R-CNN and SSD training programs (fluid.layers.anchor_generator, box_clip,
bipartite_match). Paddle differentiates none of them: they register without a gradient.

Images are told apart by a LoD, as in Paddle: box_clip's Input rows and bipartite_match's DistMat rows are
grouped by their LoD's last level (without one, they are a single image). Boxes are [x1, y1, x2, y2] in pixels.
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import NO_GRAD, defop, typed
from .detection import last_dim, rank_check


def _anchor_generator_infer(ctx):
    _, _, h, w = rank_check(ctx, "Input", 4, "[N, C, H, W]")
    sizes, ratios = ctx.attr("anchor_sizes"), ctx.attr("aspect_ratios")
    if not sizes or not all(size > 0 for size in sizes):
        ctx.fail(f"anchor_sizes must be sizes > 0, got {sizes}")
    if not ratios or not all(ratio > 0 for ratio in ratios):
        ctx.fail(f"aspect_ratios must be ratios > 0, got {ratios}")
    if len(ctx.attr("variances")) != 4:
        ctx.fail(f"variances must be 4 values, got {ctx.attr('variances')}")
    if len(ctx.attr("stride")) != 2 or not all(step > 0 for step in ctx.attr("stride")):
        ctx.fail(f"stride must be 2 steps > 0 (width, height), got {ctx.attr('stride')}")
    shape = [h, w, len(sizes) * len(ratios), 4]
    return {"Anchors": (shape, ctx.dtype("Input")), "Variances": (shape, ctx.dtype("Input"))}


defop("anchor_generator", ["Input"], ["Anchors", "Variances"], infer=_anchor_generator_infer, grad=NO_GRAD,
      attrs={"anchor_sizes": typed([], AttrType.FLOATS), "aspect_ratios": typed([], AttrType.FLOATS),
             "variances": typed([], AttrType.FLOATS), "stride": typed([16.0, 16.0], AttrType.FLOATS),
             "offset": 0.5})


def _box_clip_infer(ctx):
    boxes = ctx.shape("Input")
    if boxes is not None:
        last_dim(ctx, "Input", boxes, 4)
    info = rank_check(ctx, "ImInfo", 2, "[N, 3] (height, width, scale)")
    if info[1] not in (3, -1):
        ctx.fail(f"ImInfo must be [N, 3] (height, width, scale), got {info}")
    return {"Output": (boxes, ctx.dtype("Input"))}


defop("box_clip", ["Input", "ImInfo"], ["Output"], infer=_box_clip_infer, grad=NO_GRAD)


def _bipartite_match_infer(ctx):
    _, columns = rank_check(ctx, "DistMat", 2, "[rows, columns]")
    if ctx.attr("match_type") not in ("bipartite", "per_prediction"):
        ctx.fail(f"match_type must be bipartite or per_prediction, got {ctx.attr('match_type')!r}")
    return {"ColToRowMatchIndices": ([-1, columns], VarType.INT32),
            "ColToRowMatchDist": ([-1, columns], ctx.dtype("DistMat"))}


defop("bipartite_match", ["DistMat"], ["ColToRowMatchIndices", "ColToRowMatchDist"], infer=_bipartite_match_infer,
      grad=NO_GRAD, attrs={"match_type": "bipartite", "dist_threshold": 0.5},
      lod_levels=lambda ctx: {"ColToRowMatchIndices": 0, "ColToRowMatchDist": 0})   # a row per instance
