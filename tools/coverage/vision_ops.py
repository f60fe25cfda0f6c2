"""Rows: paddle.vision.ops, the operators of detection models (RoI pooling, deformable convolution, YOLO's box
decoding and loss, prior boxes, box coding, non-maximum suppression, proposals). Exported detection models hold
the inference ops; training programs the differentiable ones."""

import numpy as np
import paddle
from paddle.base.framework import in_dynamic_or_pir_mode
from paddle.base.layer_helper import LayerHelper
from paddle.vision import ops as V

from .legacy_shim import _outputs
from .spec import f, given, ints, pos, table, unit


def _const(values, dtype="float32"):
    return paddle.to_tensor(np.array(values, dtype))


def _like(values, x):
    """Constant values in x's float dtype (the float64 run rebuilds a row in float64)."""
    return _const(values).astype(x.dtype)


def rois():
    """Two boxes on image 0, one on image 1 (x1, y1, x2, y2 in input pixels at spatial_scale 1)."""
    return _const([[0.5, 0.5, 3.0, 3.0], [1.0, 0.0, 4.0, 2.5], [0.0, 1.2, 2.6, 4.0]])


def rois_num():
    return _const([2, 1], "int32")


def psroi_pool(x, boxes, boxes_num, output_size, spatial_scale=1.0):
    """V.psroi_pool, but in legacy mode with its RoisNum: Paddle 3.3.1's legacy API leaves boxes_num out of the op,
    whose kernel then reads the LoD the boxes lack (a segmentation fault)."""
    if in_dynamic_or_pir_mode():
        return V.psroi_pool(x, boxes, boxes_num, output_size, spatial_scale)
    pooled_height, pooled_width = (output_size, output_size) if isinstance(output_size, int) else output_size
    helper = LayerHelper("psroi_pool")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="psroi_pool", inputs={"X": x, "ROIs": boxes, "RoisNum": boxes_num}, outputs={"Out": out},
                     attrs={"output_channels": x.shape[1] // (pooled_height * pooled_width),
                            "spatial_scale": spatial_scale, "pooled_height": pooled_height,
                            "pooled_width": pooled_width})
    return out


ANCHORS = [10, 13, 16, 30]


def _rpn_anchors():
    """[4, 4, 2, 4] anchors of a 16 x 16 image: squares of sides 4 and 8 centred on each 4-pixel cell."""
    centers = np.arange(4) * 4.0 + 1.5
    cy, cx = np.meshgrid(centers, centers, indexing="ij")
    halves = np.array([1.5, 3.5])
    boxes = [cx[..., None] - halves, cy[..., None] - halves, cx[..., None] + halves, cy[..., None] + halves]
    return _const(np.stack(boxes, axis=-1))


def _fpn_levels(rois, levels, restore, counts):
    """One vector of each level's RoI sums, the RoIs' restore index and each level's counts per image (the
    outputs themselves carry Paddle's LoD, which its executor does not fetch)."""
    sums = paddle.stack([level.sum(axis=0) for level in levels]).reshape([-1])
    return paddle.concat([sums, restore.astype(rois.dtype).reshape([-1]),
                          paddle.concat(counts).astype(rois.dtype)])


PRIORS = [[0., 0., 2., 2.], [1., 1., 3., 4.]]
# two images of five boxes: 0 and 1 overlap (IoU 0.56), 2 is apart, 3 nearly repeats 2, 4 is apart
NMS_BOXES = [[[0, 0, 2, 2], [0.5, 0.5, 2, 2], [3, 3, 4, 4], [3, 3.1, 4, 4], [5, 0, 6, 1]],
             [[0, 0, 4, 4], [1, 1, 4, 4], [0, 0, 4, 3.9], [6, 6, 9, 9], [6, 6, 8, 9]]]
# per image and class (3 classes, 5 boxes), with equal scores (ties) and some under the threshold
NMS_SCORES = [[[0.9, 0.8, 0.7, 0.7, 0.05], [0.6, 0.6, 0.3, 0.9, 0.9], [0.2, 0.5, 0.5, 0.5, 0.4]],
              [[0.3, 0.3, 0.3, 0.8, 0.8], [0.9, 0.1, 0.9, 0.5, 0.2], [0.4, 0.4, 0.7, 0.6, 0.6]]]
NMS_OUTPUTS = {"Out": "float32", "Index": "int32", "NmsRoisNum": "int32"}


def _multiclass_nms3(boxes, scores, rois_num=None, **attrs):
    """multiclass_nms3 appended as Paddle 2.x's paddle.vision.ops.multiclass_nms did (3.3.1 has no such API)."""
    defaults = {"score_threshold": 0.1, "nms_top_k": -1, "keep_top_k": -1, "nms_threshold": 0.3,
                "normalized": True, "nms_eta": 1.0, "background_label": 0}
    attrs = defaults | attrs
    if paddle.framework.in_pir_mode():   # legacy ops cannot be appended there: the PIR op itself
        return paddle._C_ops.multiclass_nms3(boxes, scores, rois_num, *attrs.values())[0] * 1.0
    inputs = {"BBoxes": boxes, "Scores": scores} | ({} if rois_num is None else {"RoisNum": rois_num})
    return _outputs("multiclass_nms3", inputs, NMS_OUTPUTS, attrs)[0] * 1.0

ROI = table(
    "vision_ops",
    ("roi_align", lambda x: V.roi_align(x, rois(), rois_num(), 2), f(2, 3, 5, 5)),
    ("roi_align_scaled_unaligned", lambda x: V.roi_align(x, rois(), rois_num(), (2, 3), spatial_scale=0.8,
                                                         sampling_ratio=2, aligned=False), f(2, 3, 5, 5)),
    ("RoIAlign", lambda x: V.RoIAlign(3, spatial_scale=1.0)(x, rois(), rois_num()), f(2, 2, 6, 6)),
    ("roi_pool", lambda x: V.roi_pool(x, rois(), rois_num(), 2), f(2, 3, 5, 5)),
    ("RoIPool_scaled", lambda x: V.RoIPool((2, 3), spatial_scale=0.5)(x, rois() * 2, rois_num()), f(2, 3, 5, 5)),
    ("psroi_pool", lambda x: psroi_pool(x, rois(), rois_num(), 2), f(2, 8, 5, 5)),
    ("PSRoIPool_scaled", lambda x: psroi_pool(x, rois() * 2, rois_num(), 3, spatial_scale=0.5), f(2, 18, 5, 5)),
)

DEFORM = table(
    "vision_ops",
    ("deform_conv2d", lambda x, off, w: V.deform_conv2d(x, off, w, padding=1), f(1, 2, 4, 4), f(1, 18, 4, 4),
     f(3, 2, 3, 3)),
    ("deform_conv2d_mask", lambda x, off, m, w: V.deform_conv2d(x, off, w, padding=1, mask=m), f(1, 2, 4, 4),
     f(1, 18, 4, 4), unit(1, 9, 4, 4), f(3, 2, 3, 3)),
    ("deform_conv2d_stride_groups", lambda x, off, w: V.deform_conv2d(x, off, w, stride=2, padding=1, groups=2,
                                                                      deformable_groups=2), f(2, 4, 5, 5),
     f(2, 36, 3, 3), f(4, 2, 3, 3)),
    ("DeformConv2D", lambda x, off: V.DeformConv2D(2, 3, 3, padding=1)(x, off), f(1, 2, 4, 4), f(1, 18, 4, 4)),
    ("DeformConv2D_mask_dilation", lambda x, off, m: V.DeformConv2D(2, 3, 2, dilation=2)(x, off, m),
     f(2, 2, 5, 5), f(2, 8, 3, 3), unit(2, 4, 3, 3)),
)

DETECTION = table(
    "vision_ops",
    ("yolo_box", lambda x: V.yolo_box(x, _const([[32, 32], [24, 40]], "int32"), ANCHORS, 2, 0.01, 8)[0] * 1.0,
     f(2, 14, 4, 4)),
    ("yolo_box_scores_iou_aware", lambda x: V.yolo_box(x, _const([[32, 32]], "int32"), ANCHORS, 2, 0.01, 8,
                                                       clip_bbox=False, scale_x_y=1.2, iou_aware=True,
                                                       iou_aware_factor=0.4)[1] * 1.0, f(1, 16, 3, 3)),
    ("prior_box", lambda x, img: V.prior_box(x, img, [4.0], [8.0], aspect_ratios=[2.0], flip=True, clip=True)[0] * 1.0,
     f(1, 2, 3, 3), f(1, 3, 12, 12)),
    ("prior_box_min_max_order", lambda x, img: V.prior_box(
        x, img, [2.0, 4.0], [6.0, 8.0], variance=[0.1, 0.1, 0.2, 0.2], steps=[4.0, 4.0], offset=0.4,
        min_max_aspect_ratios_order=True)[1] * 1.0,
     f(1, 2, 2, 3), f(1, 3, 8, 12)),
    ("box_coder_encode", lambda t: V.box_coder(_like(PRIORS, t), [0.1, 0.1, 0.2, 0.2], t,
                                               "encode_center_size"), pos(3, 4)),
    ("box_coder_decode", lambda t: V.box_coder(_like(PRIORS, t), [0.1, 0.1, 0.2, 0.2], t,
                                               "decode_center_size", box_normalized=False), f(3, 2, 4)),
    ("nms", lambda x: x * V.nms(_const([[0, 0, 2, 2], [0.5, 0.5, 2, 2], [3, 3, 4, 4]]), 0.3).astype(x.dtype).sum(),
     f(2)),
    ("matrix_nms", lambda s: V.matrix_nms(_like([[[0, 0, 2, 2], [0.5, 0.5, 2, 2], [3, 3, 4, 4]]], s), s, 0.1, 0.1, 10,
                                          10)[0] * 1.0, unit(1, 2, 3)),
    ("generate_proposals", lambda s, d: V.generate_proposals(
        s, d, _like([[16., 16.]], s), _rpn_anchors().astype(s.dtype), paddle.ones([4, 4, 2, 4], s.dtype),
        pre_nms_top_n=20, post_nms_top_n=8, return_rois_num=True)[0] * 1.0,
     unit(1, 2, 4, 4), f(1, 8, 4, 4)),
    ("distribute_fpn_proposals", lambda r: _fpn_levels(r, *V.distribute_fpn_proposals(
        r, 2, 5, 4, 224, rois_num=_const([3, 2], "int32"))),
     given([[0, 0, 50, 50], [10, 10, 120, 130], [0, 0, 223, 223], [5, 5, 500, 460], [0, 0, 30, 20]], "float32")),
    ("multiclass_nms3", lambda s: _multiclass_nms3(_like(NMS_BOXES, s), s, nms_top_k=4, keep_top_k=4),
     given(NMS_SCORES, "float32")),
    ("multiclass_nms3_pixels_background", lambda s: _multiclass_nms3(
        _like(NMS_BOXES, s) * 10.0, s, score_threshold=0.25, nms_threshold=0.6, nms_eta=0.9, normalized=False,
        background_label=1), given(NMS_SCORES, "float32")),
    ("multiclass_nms3_per_class_boxes", lambda b, s: _multiclass_nms3(
        b, s, _const([3, 2], "int32"), keep_top_k=5, background_label=-1),
     given(np.array(NMS_BOXES).reshape(5, 2, 4), "float32"), given(np.array(NMS_SCORES)[0, :2].T, "float32")),
    ("yolo_loss", lambda x, gt, lab: V.yolo_loss(x, gt, lab, ANCHORS, [0, 1], 2, 0.7, 8, use_label_smooth=False),
     f(2, 14, 4, 4), unit(2, 3, 4, grad=False), ints(2, 2, 3, dtype="int32")),
    # the second image's second box has w 0: Paddle skips it
    ("yolo_loss_score_smooth", lambda x, gt, lab, score: V.yolo_loss(x, gt, lab, ANCHORS, [1], 2, 0.5, 8,
                                                                     gt_score=score, scale_x_y=1.1),
     f(2, 7, 3, 3), given([[[0.3, 0.6, 0.4, 0.5], [0.7, 0.2, 0.9, 0.3]],
                           [[0.5, 0.45, 0.9, 0.8], [0.1, 0.8, 0.0, 0.15]]], "float32"),
     ints(2, 2, 2, dtype="int32"), unit(2, 2, grad=False)),
)

ROWS = ROI + DEFORM + DETECTION
