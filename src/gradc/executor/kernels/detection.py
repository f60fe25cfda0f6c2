"""Kernels of gradc.ops.detection: yolo_box, prior_box, box_coder. Each computes in the input's float dtype in
Paddle's order of operations (its kernels compute in the input's type), so values agree with Paddle's bit for
bit or nearly, and a threshold decides the same way."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from ...ops.detection import expand_aspect_ratios, prior_count
from . import kernel
from .glibc_expf import expf


def c_math(function, x: np.ndarray) -> np.ndarray:
    """function(x) rounded once to x's dtype: nearer C's logf and log2f than numpy's own float32 versions, which can
    be an ulp away (enough to move a RoI to another level), though glibc's are off the rounded value on about 1
    input in 1,500 too."""
    return function(np.asarray(x).astype(np.float64)).astype(x.dtype)


def attr32(k, name: str):
    """A float attribute (or list of them) as Paddle holds it, float32 (0.01 is 0.0099999998), however precisely
    a program built in memory gave it: a float64 kernel then compares and scales as Paddle's does."""
    return np.float32(k.attr(name))


def exp(x: np.ndarray) -> np.ndarray:
    """std::exp in x's dtype: glibc's expf to the bit for float32."""
    return expf(x) if x.dtype == np.float32 else c_math(np.exp, x)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^-x) of the input's dtype (Paddle takes e^-x in it, the rest in double)."""
    return (1.0 / (1.0 + exp(-x).astype(np.float64))).astype(x.dtype)


@kernel("yolo_box")
def yolo_box(k):
    """Decode YOLOv3 head X [N, A * (5 + classes), H, W] (iou_aware: A IoU channels first) into Boxes
    [N, A * H * W, 4] in image pixels and Scores [N, A * H * W, classes]; a box whose confidence is below
    conf_thresh is all zeros in both, as in Paddle."""
    x, img_size = k.x("X"), k.x("ImgSize")
    anchors = np.array(k.attr("anchors"), np.int64).reshape(-1, 2)
    scale, factor = float(attr32(k, "scale_x_y")), float(attr32(k, "iou_aware_factor"))   # 1.05 is 1.0499999523
    classes, ratio = k.attr("class_num"), k.attr("downsample_ratio")
    n, _, h, w = x.shape
    an_num, dtype = len(anchors), x.dtype
    if img_size.shape != (n, 2):
        raise ValueError(f"ImgSize must be [N, 2] = [{n}, 2] (height, width per image), got {list(img_size.shape)}")
    if k.attr("iou_aware"):
        iou, x = sigmoid(x[:, :an_num]), x[:, an_num:]
    head = x.reshape(n, an_num, 5 + classes, h, w)
    conf = sigmoid(head[:, :, 4])
    if k.attr("iou_aware"):   # C's pow of doubles, with the exponents cast to the input's type
        powers = [value.astype(np.float64) ** np.float64(dtype.type(exponent))
                  for value, exponent in ((conf, 1.0 - factor), (iou, factor))]
        conf = (powers[0] * powers[1]).astype(dtype)
    kept = conf >= attr32(k, "conf_thresh")
    img_h = img_size[:, 0].astype(dtype).reshape(n, 1, 1, 1)
    img_w = img_size[:, 1].astype(dtype).reshape(n, 1, 1, 1)
    bias = dtype.type(-0.5 * (scale - 1.0))
    scale = dtype.type(scale)
    columns = np.arange(w, dtype=dtype).reshape(1, 1, 1, w)
    rows = np.arange(h, dtype=dtype).reshape(1, 1, h, 1)
    center_x = (columns + sigmoid(head[:, :, 0]) * scale + bias) * img_w / dtype.type(w)
    center_y = (rows + sigmoid(head[:, :, 1]) * scale + bias) * img_h / dtype.type(h)
    width = exp(head[:, :, 2]) * anchors[:, 0].astype(dtype).reshape(1, -1, 1, 1) * img_w / dtype.type(ratio * w)
    height = exp(head[:, :, 3]) * anchors[:, 1].astype(dtype).reshape(1, -1, 1, 1) * img_h / dtype.type(ratio * h)
    two = dtype.type(2)
    boxes = np.stack([center_x - width / two, center_y - height / two, center_x + width / two,
                      center_y + height / two], axis=-1)
    if k.attr("clip_bbox"):
        boxes[..., :2] = np.maximum(boxes[..., :2], 0)
        boxes[..., 2] = np.minimum(boxes[..., 2], img_w - 1)
        boxes[..., 3] = np.minimum(boxes[..., 3], img_h - 1)
    scores = conf[:, :, None] * sigmoid(head[:, :, 5:])
    boxes = np.where(kept[..., None], boxes, 0).astype(dtype)
    scores = np.where(kept[:, :, None], scores, 0).astype(dtype)
    return {"Boxes": boxes.reshape(n, an_num * h * w, 4),
            "Scores": scores.transpose(0, 1, 3, 4, 2).reshape(n, an_num * h * w, classes)}


def prior_half_sizes(k) -> np.ndarray:
    """[P, 2] half widths and heights of one cell's priors, in Paddle's order: per min size, its aspect ratios
    then the square of sqrt(min * max), or (min_max_aspect_ratios_order) the min square, the max square, then the
    other aspect ratios."""
    ratios = expand_aspect_ratios(attr32(k, "aspect_ratios").tolist(), k.attr("flip"))
    ratios = np.float32(ratios)
    max_sizes, halves = k.attr("max_sizes"), []
    for s, min_size in enumerate(attr32(k, "min_sizes")):
        by_ratio = [(min_size * np.sqrt(r) / 2.0, min_size / np.sqrt(r) / 2.0) for r in ratios]
        square = [(np.sqrt(min_size * np.float32(max_sizes[s])) / 2.0,) * 2] if max_sizes else []
        if k.attr("min_max_aspect_ratios_order"):
            halves += [(min_size / 2.0,) * 2, *square,
                       *(half for r, half in zip(ratios, by_ratio) if abs(float(r) - 1.0) >= 1e-6)]
        else:
            halves += [*by_ratio, *square]
    return np.array(halves, np.float64)


@kernel("prior_box", shape_only=("Input", "Image"))
def prior_box(k):
    """SSD's prior boxes [H, W, P, 4] of a feature map over an image, normalized by the image's size."""
    feature, image = k.x("Input"), k.x("Image")
    dtype = feature.dtype
    (fh, fw), (ih, iw) = feature.shape[2:], image.shape[2:]
    step_w, step_h = attr32(k, "step_w"), attr32(k, "step_h")
    if step_w == 0 or step_h == 0:
        step_w, step_h = dtype.type(iw) / dtype.type(fw), dtype.type(ih) / dtype.type(fh)
    priors = prior_count(k.attr("min_sizes"), k.attr("max_sizes"), k.attr("aspect_ratios"), k.attr("flip"))
    check_shape((fh, fw, priors, 4), dtype, "Boxes")   # before listing the priors one by one
    offset = dtype.type(attr32(k, "offset"))
    center_x = ((np.arange(fw, dtype=dtype) + offset) * dtype.type(step_w)).reshape(1, fw, 1)
    center_y = ((np.arange(fh, dtype=dtype) + offset) * dtype.type(step_h)).reshape(fh, 1, 1)
    halves = prior_half_sizes(k).astype(dtype)
    half_w, half_h = halves[:, 0], halves[:, 1]
    width, height = dtype.type(iw), dtype.type(ih)
    corners = [(center_x - half_w) / width, (center_y - half_h) / height,
               (center_x + half_w) / width, (center_y + half_h) / height]
    boxes = np.stack(np.broadcast_arrays(*corners), axis=-1)
    if k.attr("clip"):
        boxes = np.clip(boxes, 0, 1)
    variances = np.broadcast_to(attr32(k, "variances").astype(dtype), boxes.shape).copy()
    return {"Boxes": boxes.astype(dtype), "Variances": variances}


def center_size(boxes: np.ndarray, pixel: int):
    """(width, height, center x, center y) of [..., 4] corner boxes; a pixel box's width counts both ends."""
    width = boxes[..., 2] - boxes[..., 0] + pixel
    height = boxes[..., 3] - boxes[..., 1] + pixel
    return width, height, boxes[..., 0] + width / 2, boxes[..., 1] + height / 2


@kernel("box_coder")
def box_coder(k):
    """Encode TargetBox [N, 4] as offsets [N, M, 4] from each PriorBox [M, 4], or decode offsets [N, M, 4]
    (axis 0: prior j for column j; axis 1: prior i for row i) back into boxes; the offsets are divided by
    (encode) or scaled by (decode) PriorBoxVar or the variance attribute, when one is given (also in float64,
    where Paddle's decoding misreads the attribute: gradc.ops.detection)."""
    prior, target, prior_var = k.x("PriorBox"), k.x("TargetBox"), k.optional("PriorBoxVar")
    dtype, variance = target.dtype, attr32(k, "variance")
    pixel = dtype.type(0 if k.attr("box_normalized") else 1)
    if prior_var is not None and prior_var.shape != prior.shape:
        raise ValueError(f"PriorBoxVar {list(prior_var.shape)} must be shaped like PriorBox {list(prior.shape)}")
    scales = prior_var if prior_var is not None else variance.astype(dtype) if variance.size else None
    prior_w, prior_h, prior_x, prior_y = center_size(prior, pixel)
    if k.attr("code_type") == "encode_center_size":
        check_shape((len(target), len(prior), 4), dtype, "OutputBox")   # every target against every prior
        tw, th = (target[:, 2] - target[:, 0] + pixel)[:, None], (target[:, 3] - target[:, 1] + pixel)[:, None]
        tx, ty = ((target[:, 2] + target[:, 0]) / 2)[:, None], ((target[:, 3] + target[:, 1]) / 2)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.stack([(tx - prior_x) / prior_w, (ty - prior_y) / prior_h,
                            c_math(np.log, np.abs(tw / prior_w)), c_math(np.log, np.abs(th / prior_h))], axis=-1)
        return {"OutputBox": out if scales is None else out / scales}
    axis = k.attr("axis")
    if target.ndim != 3 or target.shape[1 - axis] != prior.shape[0]:
        raise ValueError(f"TargetBox {list(target.shape)} must have PriorBox's {prior.shape[0]} boxes on dim "
                         f"{1 - axis}")
    along = (slice(None), None) if axis == 1 else (None, slice(None))   # prior i for row i, or j for column j
    scales = np.ones(4, dtype) if scales is None else scales
    scales = scales[along] if scales.ndim == 2 else scales
    prior_w, prior_h, prior_x, prior_y = (v[along] for v in (prior_w, prior_h, prior_x, prior_y))
    center_x = scales[..., 0] * target[..., 0] * prior_w + prior_x
    center_y = scales[..., 1] * target[..., 1] * prior_h + prior_y
    width = exp(scales[..., 2] * target[..., 2]) * prior_w
    height = exp(scales[..., 3] * target[..., 3]) * prior_h
    two = dtype.type(2)
    out = [center_x - width / two, center_y - height / two, center_x + width / two - pixel,
           center_y + height / two - pixel]
    return {"OutputBox": np.stack(out, axis=-1).astype(dtype)}
