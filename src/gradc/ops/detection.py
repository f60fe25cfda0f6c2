"""Inference ops of detection models (paddle.vision.ops; exported PP-YOLO, SSD and Faster R-CNN programs): YOLO's
box decoding (yolo_box), SSD's prior boxes (prior_box) and box coding (box_coder), and the selections of
gradc.ops.detection_nms (nms, matrix_nms, multiclass_nms3, generate_proposals_v2, distribute_fpn_proposals).
Paddle differentiates none of them: they register without a gradient.

Boxes are [x1, y1, x2, y2]. Where a box is in pixels (box_coder's box_normalized=False, the proposals'
pixel_offset=True) its width is x2 - x1 + 1, as in Paddle's kernels.

Where Paddle 3.3.1 is wrong: its float64 box_coder decoding with the `variance` attribute reads the attribute's
float32 values as float64 ones (tiny numbers), so its offsets are all but ignored; gradc scales them by the
variances, as its float32 kernel does.
"""

from __future__ import annotations

import math

from ..ir import AttrType, VarType
from ..registry import NO_GRAD, defop, typed
from .infer import check_float


def rank_check(ctx, slot: str, rank: int, layout: str) -> list[int]:
    """The shape of ``slot``, which must have ``rank`` dims (named in ``layout``, e.g. "[N, C, H, W]")."""
    shape = ctx.shape(slot)
    if shape is not None and len(shape) != rank:
        ctx.fail(f"{slot} must be {rank}-D {layout}, got shape {shape}")
    check_float(ctx, slot)
    return shape if shape is not None else [-1] * rank


def last_dim(ctx, slot: str, shape: list[int], size: int) -> None:
    if shape[-1] >= 0 and shape[-1] != size:
        ctx.fail(f"{slot}'s last dim must be {size} (a box), got shape {shape}")


def product(*dims: int) -> int:
    """The product of known dims, -1 where one is unknown."""
    result = 1
    for dim in dims:
        if dim < 0:
            return -1
        result *= dim
    return result


# ---------------------------------------------------------------- yolo_box
def _yolo_box_infer(ctx):
    n, channels, h, w = rank_check(ctx, "X", 4, "[N, C, H, W]")
    img_size = ctx.shape("ImgSize")
    if img_size is not None and (len(img_size) != 2 or img_size[1] not in (2, -1)):
        ctx.fail(f"ImgSize must be [N, 2] (height, width), got shape {img_size}")
    if ctx.dtype("ImgSize") not in (None, VarType.INT32):
        ctx.fail("ImgSize must be int32")
    anchors, class_num = ctx.attr("anchors"), ctx.attr("class_num")
    if not anchors or len(anchors) % 2:
        ctx.fail(f"anchors must be (width, height) pairs, got {anchors}")
    if class_num < 1 or ctx.attr("downsample_ratio") < 1:
        ctx.fail(f"class_num and downsample_ratio must be >= 1, got {class_num} and {ctx.attr('downsample_ratio')}")
    an_num = len(anchors) // 2
    expected = an_num * (5 + class_num) + (an_num if ctx.attr("iou_aware") else 0)
    if channels >= 0 and channels != expected:
        ctx.fail(f"X has {channels} channels; {an_num} anchors of {class_num} classes need {expected}"
                 f"{' (iou_aware)' if ctx.attr('iou_aware') else ''}")
    box_num = product(an_num, h, w)
    return {"Boxes": ([n, box_num, 4], ctx.dtype("X")), "Scores": ([n, box_num, class_num], ctx.dtype("X"))}


defop("yolo_box", ["X", "ImgSize"], ["Boxes", "Scores"], infer=_yolo_box_infer, grad=NO_GRAD,
      attrs={"anchors": [], "class_num": 1, "conf_thresh": 0.01, "downsample_ratio": 32, "clip_bbox": True,
             "scale_x_y": 1.0, "iou_aware": False, "iou_aware_factor": 0.5})


# ---------------------------------------------------------------- prior_box
def _bucket(ratio: float):
    """A ratio's 1e-6-wide bucket (an infinite one its own)."""
    return math.floor(ratio * 1e6) if math.isfinite(ratio) else ratio


def expand_aspect_ratios(ratios, flip: bool) -> list[float]:
    """1, then each ratio not yet listed (within 1e-6), followed by its inverse when flipped (Paddle's order). A
    ratio meets only the listed ones of the buckets around its own (Paddle compares it with every one: quadratic
    time for a long list)."""
    expanded, buckets = [], {}
    for ratio in [1.0, *ratios]:
        key = _bucket(ratio)
        around = range(key - 2, key + 3) if math.isfinite(ratio) else [key]   # +-2: ratio * 1e6 is rounded
        if expanded and not all(abs(ratio - seen) >= 1e-6 for near in around for seen in buckets.get(near, ())):
            continue
        for added in [ratio, 1.0 / ratio] if flip and expanded else [ratio]:
            expanded.append(added)
            buckets.setdefault(_bucket(added), []).append(added)
    return expanded


def prior_count(min_sizes, max_sizes, ratios, flip: bool) -> int:
    return len(expand_aspect_ratios(ratios, flip)) * len(min_sizes) + len(max_sizes)


def _prior_box_infer(ctx):
    _, _, h, w = rank_check(ctx, "Input", 4, "[N, C, H, W]")
    rank_check(ctx, "Image", 4, "[N, C, H, W]")
    min_sizes, max_sizes = ctx.attr("min_sizes"), ctx.attr("max_sizes")
    if not min_sizes or not all(size > 0 for size in min_sizes):
        ctx.fail(f"min_sizes must be sizes > 0, got {min_sizes}")
    if max_sizes and (len(max_sizes) != len(min_sizes) or any(a <= b for a, b in zip(max_sizes, min_sizes))):
        ctx.fail(f"max_sizes must give one size above each of min_sizes {min_sizes}, got {max_sizes}")
    if len(ctx.attr("variances")) != 4:
        ctx.fail(f"variances must be 4 values, got {ctx.attr('variances')}")
    if not all(ratio > 0 for ratio in ctx.attr("aspect_ratios")):
        ctx.fail(f"aspect_ratios must be > 0, got {ctx.attr('aspect_ratios')}")
    shape = [h, w, prior_count(min_sizes, max_sizes, ctx.attr("aspect_ratios"), ctx.attr("flip")), 4]
    return {"Boxes": (shape, ctx.dtype("Input")), "Variances": (shape, ctx.dtype("Input"))}


defop("prior_box", ["Input", "Image"], ["Boxes", "Variances"], infer=_prior_box_infer, grad=NO_GRAD,
      attrs={"min_sizes": typed([], AttrType.FLOATS), "max_sizes": typed([], AttrType.FLOATS),
             "aspect_ratios": typed([], AttrType.FLOATS), "variances": typed([], AttrType.FLOATS), "flip": True,
             "clip": True, "step_w": 0.0, "step_h": 0.0, "offset": 0.5, "min_max_aspect_ratios_order": False})


# ---------------------------------------------------------------- box_coder
def _box_coder_infer(ctx):
    prior = rank_check(ctx, "PriorBox", 2, "[M, 4]")
    last_dim(ctx, "PriorBox", prior, 4)
    variance, code_type, axis = ctx.attr("variance"), ctx.attr("code_type"), ctx.attr("axis")
    if ctx.has("PriorBoxVar"):
        prior_var = ctx.shape("PriorBoxVar")
        if prior_var is not None and (len(prior_var) != 2 or prior_var[-1] not in (4, -1)
                                      or -1 not in (prior[0], prior_var[0]) and prior[0] != prior_var[0]):
            ctx.fail(f"PriorBoxVar must be shaped like PriorBox {prior}, got {prior_var}")
        if variance:
            ctx.fail("PriorBoxVar and the variance attribute cannot both be given")
    if variance and len(variance) != 4:
        ctx.fail(f"variance must be 4 values, got {variance}")
    if code_type == "encode_center_size":
        target = rank_check(ctx, "TargetBox", 2, "[N, 4] to encode")
        last_dim(ctx, "TargetBox", target, 4)
        return {"OutputBox": ([target[0], prior[0], 4], ctx.dtype("TargetBox"))}
    if code_type != "decode_center_size":
        ctx.fail(f"code_type must be encode_center_size or decode_center_size, got {code_type!r}")
    if axis not in (0, 1):
        ctx.fail(f"axis must be 0 or 1, got {axis}")
    target = rank_check(ctx, "TargetBox", 3, "[N, M, 4] to decode")
    last_dim(ctx, "TargetBox", target, 4)
    along = target[1 - axis]
    if along >= 0 and prior[0] >= 0 and along != prior[0]:
        ctx.fail(f"TargetBox's dim {1 - axis} must match PriorBox's {prior[0]} boxes (axis {axis}), got {target}")
    return {"OutputBox": (target, ctx.dtype("TargetBox"))}


defop("box_coder", ["PriorBox", "PriorBoxVar?", "TargetBox"], ["OutputBox"], infer=_box_coder_infer, grad=NO_GRAD,
      attrs={"code_type": "encode_center_size", "box_normalized": True, "axis": 0,
             "variance": typed([], AttrType.FLOATS)})
