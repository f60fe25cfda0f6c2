"""Rows: paddle.vision.ops, the operators of detection models (RoI pooling, deformable convolution, YOLO's box
decoding and loss, prior boxes, box coding, non-maximum suppression, proposals). Exported detection models hold
the inference ops; training programs the differentiable ones."""

import numpy as np
import paddle
from paddle.vision import ops as V

from .spec import f, given, ints, pos, table, unit


def _const(values, dtype="float32"):
    return paddle.to_tensor(np.array(values, dtype))


def rois():
    """Two boxes on image 0, one on image 1 (x1, y1, x2, y2 in input pixels at spatial_scale 1)."""
    return _const([[0.5, 0.5, 3.0, 3.0], [1.0, 0.0, 4.0, 2.5], [0.0, 1.2, 2.6, 4.0]])


def rois_num():
    return _const([2, 1], "int32")


ANCHORS = [10, 13, 16, 30]

ROI = table(
    "vision_ops",
    ("roi_align", lambda x: V.roi_align(x, rois(), rois_num(), 2), f(2, 3, 5, 5)),
    ("roi_align_scaled_unaligned", lambda x: V.roi_align(x, rois(), rois_num(), (2, 3), spatial_scale=0.8,
                                                         sampling_ratio=2, aligned=False), f(2, 3, 5, 5)),
    ("RoIAlign", lambda x: V.RoIAlign(3, spatial_scale=1.0)(x, rois(), rois_num()), f(2, 2, 6, 6)),
    ("roi_pool", lambda x: V.roi_pool(x, rois(), rois_num(), 2), f(2, 3, 5, 5)),
    ("RoIPool_scaled", lambda x: V.RoIPool((2, 3), spatial_scale=0.5)(x, rois() * 2, rois_num()), f(2, 3, 5, 5)),
    ("psroi_pool", lambda x: V.psroi_pool(x, rois(), rois_num(), 2), f(2, 8, 5, 5)),
    ("PSRoIPool_scaled", lambda x: V.PSRoIPool(3, spatial_scale=0.5)(x, rois() * 2, rois_num()), f(2, 18, 5, 5)),
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
    ("box_coder_encode", lambda t: V.box_coder(_const([[0., 0., 2., 2.], [1., 1., 3., 4.]]), [0.1, 0.1, 0.2, 0.2], t,
                                               "encode_center_size"), pos(3, 4)),
    ("box_coder_decode", lambda t: V.box_coder(_const([[0., 0., 2., 2.], [1., 1., 3., 4.]]), [0.1, 0.1, 0.2, 0.2], t,
                                               "decode_center_size", box_normalized=False), f(3, 2, 4)),
    ("nms", lambda x: x * V.nms(_const([[0, 0, 2, 2], [0.5, 0.5, 2, 2], [3, 3, 4, 4]]), 0.3).astype("float32").sum(),
     f(2)),
    ("matrix_nms", lambda s: V.matrix_nms(_const([[[0, 0, 2, 2], [0.5, 0.5, 2, 2], [3, 3, 4, 4]]]), s, 0.1, 0.1, 10,
                                          10)[0] * 1.0, unit(1, 2, 3)),
    ("generate_proposals", lambda s, d: V.generate_proposals(s, d, _const([[16., 16.]]), paddle.rand([4, 4, 2, 4]),
                                                             paddle.ones([4, 4, 2, 4]))[0] * 1.0,
     unit(1, 2, 4, 4), f(1, 8, 4, 4)),
    ("distribute_fpn_proposals", lambda r: V.distribute_fpn_proposals(
        r, 2, 5, 4, 224, rois_num=_const([3], "int32"))[0][0] * 1.0, pos(3, 4)),
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
