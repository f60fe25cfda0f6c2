"""YOLOv3's training loss (paddle.vision.ops.yolo_loss). X [N, M * (5 + class_num), H, W] holds, per image, anchor
of anchor_mask (M of them) and grid cell, the box (tx, ty, tw, th), the objectness and the class logits; GTBox
[N, B, 4] the ground-truth boxes (centre x, y and w, h as fractions of the image), GTLabel [N, B] their classes,
GTScore [N, B] their weights (mixup; default 1). Loss [N] sums per image:

- for each gt box (w and h >= 1e-6; the others are skipped, GTMatchMask -1) whose best anchor by IoU of shapes
  is in anchor_mask (else GTMatchMask -1 too), at its cell (int(x W), int(y H)) and that anchor:
  (2 - w h) score times [sigmoid cross entropy of tx and ty against the centre's offset in the cell, and
  |tw - log(w input_size / anchor_w)| + |th - ...|], plus score times the sigmoid cross entropy of every class
  logit against 1 for its class and 0 for the others (1 - s and s with use_label_smooth, s = min(1 / class_num,
  1 / 40));
- the objectness of every cell and anchor, by ObjectnessMask: the score of the gt box matched there (the last
  one, when several are), else -1 (ignored) where the predicted box (its centre scaled by scale_x_y about the
  cell's centre) overlaps some gt box by IoU > ignore_thresh, else 0: a mask > 1e-5 weighs the cross entropy
  against 1 by itself, a mask in (-0.5, 1e-5] counts the cross entropy against 0, -1 nothing.

X@GRAD treats the masks and the matching as fixed (they change only in steps) and takes Paddle's subgradient
-1 at |tw - target| = 0. Paddle 3.3.1's yolov3_loss_grad is wrong where two gt boxes match the same cell and
anchor: it overwrites the box and class gradients of the first with the second's while the loss sums both;
gradc sums them. Paddle declares grads of GTBox, GTLabel and GTScore but never computes them: gradc treats
the three as labels, with no gradient. Where Paddle indexes past the grid (a matched gt box whose centre,
truncated toward 0 to a cell, falls outside it), gradc refuses the input; a label outside [0, class_num) has no
positive class, as in Paddle.
"""

from __future__ import annotations

from ..ir import dtype_name
from ..ir.types import INTEGER_DTYPES
from ..registry import defop
from .infer import check_float, one_dtype

ATTRS = {"anchors": [], "anchor_mask": [], "class_num": 1, "ignore_thresh": 0.7, "downsample_ratio": 32,
         "use_label_smooth": True, "scale_x_y": 1.0}
GT_SLOTS = ("GTBox", "GTLabel", "GTScore")
MASKS = ("ObjectnessMask", "GTMatchMask")


def entries(class_num: int) -> int:
    """X's channels per anchor: the box (4), the objectness and the class logits."""
    return 5 + class_num


def _check_attrs(ctx) -> tuple[list[int], int]:
    """(anchor_mask, class_num), checked with the other attributes (a size 0 makes the L1 target infinite)."""
    anchors, mask, classes = ctx.attr("anchors"), ctx.attr("anchor_mask"), ctx.attr("class_num")
    if not anchors or len(anchors) % 2 or not all(a > 0 for a in anchors):
        ctx.fail(f"anchors {anchors} must be one or more (width, height) pairs of positive sizes")
    if not all(0 <= m < len(anchors) // 2 for m in mask):
        ctx.fail(f"anchor_mask {mask} must index the {len(anchors) // 2} anchors")
    if classes <= 0:
        ctx.fail(f"class_num {classes} must be > 0")
    if ctx.attr("downsample_ratio") <= 0:
        ctx.fail(f"downsample_ratio {ctx.attr('downsample_ratio')} must be > 0")
    return mask, classes


def _matches(a: int, b: int) -> bool:
    return a == b or min(a, b) < 0


def _infer(ctx):
    mask, classes = _check_attrs(ctx)
    x, box, label = ctx.shape("X"), ctx.shape("GTBox"), ctx.shape("GTLabel")
    check_float(ctx, "X")
    if len(x) != 4:
        ctx.fail(f"X must be 4-D [N, C, H, W], got shape {x}")
    channels = len(mask) * entries(classes)
    if not _matches(x[1], channels):
        ctx.fail(f"X has {x[1]} channels; {len(mask)} anchors in anchor_mask with class_num {classes} need "
                 f"{channels} = {len(mask)} * (5 + {classes})")
    if not _matches(x[2], x[3]):
        ctx.fail(f"X's grid must be square, got H {x[2]} and W {x[3]}")
    if len(box) != 3 or not _matches(box[2], 4):
        ctx.fail(f"GTBox must be [N, B, 4], got shape {box}")
    one_dtype(ctx, "X", "GTBox", *(["GTScore"] if ctx.has("GTScore") else []))
    if ctx.dtype("GTLabel") not in (*INTEGER_DTYPES, None):
        ctx.fail(f"GTLabel must hold integer classes, got {dtype_name(ctx.dtype('GTLabel'))}")
    gt_slots = [("GTLabel", label)] + ([("GTScore", ctx.shape("GTScore"))] if ctx.has("GTScore") else [])
    for slot, shape in gt_slots:
        if len(shape) != 2 or not all(_matches(a, b) for a, b in zip(shape, box)):
            ctx.fail(f"{slot} must be [N, B] = {box[:2]} like GTBox, got shape {shape}")
    if not _matches(x[0], box[0]):
        ctx.fail(f"X holds {x[0]} images and GTBox {box[0]}")
    return {"Loss": ([x[0]], ctx.dtype("X")), "ObjectnessMask": ([x[0], len(mask), x[2], x[3]], ctx.dtype("X")),
            "GTMatchMask": (box[:2], None)}   # int32 whatever the program declares (Paddle's declare X's dtype)


def _grad(g):
    """Paddle's yolov3_loss_grad: X@GRAD from the masks the forward wrote (the gt slots get none)."""
    return [g.op("yolov3_loss_grad", {**{slot: g.I(slot) for slot in ("X", *GT_SLOTS)},
                                      **{slot: g.O(slot) for slot in MASKS}, "Loss@GRAD": g.OG("Loss")},
                 {f"{slot}@GRAD": g.IG(slot) for slot in ("X", *GT_SLOTS)}, forward_attrs=True)]


def _grad_infer(ctx):
    return {"X@GRAD": (ctx.shape("X"), ctx.dtype("X"))}


defop("yolov3_loss", ["X", "GTBox", "GTLabel", "GTScore?"], ["Loss", *MASKS], attrs=ATTRS, infer=_infer,
      grad=_grad, no_grad_inputs=GT_SLOTS, no_grad_outputs=MASKS, kernel_dtype_outputs=["GTMatchMask"])
defop("yolov3_loss_grad", ["X", "GTBox", "GTLabel", "GTScore?", "Loss@GRAD", *MASKS],
      ["X@GRAD?", "GTBox@GRAD?", "GTLabel@GRAD?", "GTScore@GRAD?"], attrs=ATTRS, infer=_grad_infer
      ).grad_op_of = "yolov3_loss"
