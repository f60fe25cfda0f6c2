"""Cases for gradc.ops.yolo_loss: yolov3_loss with and without GTScore and label smoothing, scale_x_y, a gt box
skipped (w 0), one whose best anchor is not in anchor_mask, two matched in one cell (their terms sum), cells whose
objectness is ignored; and the grad op's maker (second derivatives). X keeps off the L1 kinks (|tw - target| 0)
and its predicted boxes off ignore_thresh."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(31)
ANCHORS = [10, 13, 16, 30, 33, 23]


def randn(*shape):
    return r.standard_normal(shape)


# image 0: a box, a padding box (w 0), two boxes in one cell with the same best anchor; image 1: a box whose best
# anchor (2) anchor_mask [0, 1] leaves out, and two boxes in different cells
GT = np.array([[[0.30, 0.60, 0.40, 0.50], [0.70, 0.20, 0.00, 0.30], [0.80, 0.80, 0.30, 0.35],
                [0.85, 0.90, 0.28, 0.33]],
               [[0.50, 0.45, 0.95, 0.70], [0.10, 0.80, 0.20, 0.15], [0.60, 0.30, 0.45, 0.60],
                [0.20, 0.20, 0.10, 0.10]]])
LABELS = np.array([[1, 0, 2, 1], [0, 2, 1, 3]], np.int32)
SCORES = np.array([[0.9, 1.0, 0.6, 0.8], [0.7, 1.0, 0.5, 0.95]])


def loss_case(mask, classes, **attrs):
    inputs = {"X": randn(2, len(mask) * (5 + classes), 4, 4), "GTBox": GT, "GTLabel": LABELS % classes}
    return inputs, {"anchors": ANCHORS, "anchor_mask": mask, "class_num": classes, "downsample_ratio": 8, **attrs}


def case(mask, classes, score=False, **attrs):
    inputs, attrs = loss_case(mask, classes, **attrs)
    return Case("yolov3_loss", {**inputs, **({"GTScore": SCORES} if score else {})}, attrs, wrt=["X0"])


def double(mask, classes, score=False, **attrs):
    inputs, attrs = loss_case(mask, classes, **attrs)
    return second_order("yolov3_loss", {**inputs, **({"GTScore": SCORES} if score else {})}, attrs, wrt=["X"],
                        grad_type="yolov3_loss_grad")


CASES = [
    case([0, 1], 3, use_label_smooth=False, ignore_thresh=0.5),
    case([0, 1, 2], 4, score=True, ignore_thresh=0.3),
    case([1, 2], 2, score=True, scale_x_y=1.2, ignore_thresh=0.25),
    case([2], 1, use_label_smooth=True, ignore_thresh=0.9),
    double([0, 1], 3, score=True, ignore_thresh=0.3),
    double([0, 1, 2], 2, use_label_smooth=False, ignore_thresh=0.5),
]
