"""PaddleDetection's PP-YOLOE head as it trains (PPYOLOEHead.forward_train and get_loss, past its static assigner's
epochs): per level an ESE attention stem (a 1x1 conv gate of the average-pooled feature, a 1x1 ConvBN with swish),
the class conv (sigmoid scores) and the distribution conv (4 x 17 bins); anchors of each grid cell; the predicted
boxes decoded by a softmax over the bins and the fixed projection conv; TaskAlignedAssigner (alpha 1, beta 6, top 13:
IoU of gt and detached predicted boxes, the gt class's detached score, anchors inside the gt, the top-k metric, the
highest-IoU gt where an anchor has several, one_hot targets scaled by the normalized metric); the varifocal loss, and
on the positive anchors (masked_select) GIoU and distribution focal loss, weighted 1, 2.5 and 0.5. Rebuilt with
Paddle's layers from PaddleDetection's ppdet/modeling/heads/ppyoloe_head.py, assigners/task_aligned_assigner.py,
assigners/utils.py, bbox_utils.py, losses/iou_loss.py and backbones/cspresnet.py (develop); the backbone and neck are
left out, the three feature maps they give a 64 x 64 image fed; 4 classes, widths shrunk. Its _init_weights (zero
prediction convs, which pass no gradient to the stems at the first step) is not reproduced: the layers' own
initializers. The assigner's `if mask_positive_sum.max() > 1` (a Python branch on a tensor) always takes its where,
which keeps the mask where no anchor has two gts. For tools/zoo_train_static.py."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

CLASSES, REG_MAX, STRIDES, WIDTHS, SIZE, BOXES = 4, 16, (32, 16, 8), (32, 16, 8), 64, 3
ALPHA, BETA, TOPK, EPS = 1.0, 6.0, 13, 1e-9


class ConvBN(nn.Layer):   # cspresnet's ConvBNLayer with swish
    def __init__(self, width: int):
        super().__init__()
        self.conv, self.bn = nn.Conv2D(width, width, 1, bias_attr=False), nn.BatchNorm2D(width)

    def forward(self, x):
        return F.swish(self.bn(self.conv(x)))


class ESEAttn(nn.Layer):
    def __init__(self, width: int):
        super().__init__()
        self.fc, self.conv = nn.Conv2D(width, width, 1), ConvBN(width)

    def forward(self, feat, avg_feat):
        return self.conv(feat * F.sigmoid(self.fc(avg_feat)))


def _anchors(levels=STRIDES, size: int = SIZE):
    """generate_anchors_for_grid_cell (grid_cell_scale 5, offset 0.5): anchors, points, strides of every cell."""
    anchors, points, strides = [], [], []
    for stride in levels:
        cells = -(-size // stride)   # a padded stride-2 conv rounds up
        shift = (np.arange(cells, dtype="float32") + 0.5) * stride
        y, x = np.meshgrid(shift, shift, indexing="ij")
        half = 5.0 * stride / 2
        anchors.append(np.stack([x - half, y - half, x + half, y + half], -1).reshape(-1, 4))
        points.append(np.stack([x, y], -1).reshape(-1, 2))
        strides.append(np.full((cells * cells, 1), stride, "float32"))
    return (np.concatenate(anchors).astype("float32"), np.concatenate(points).astype("float32"),
            np.concatenate(strides))


def iou_similarity(box1, box2):   # bbox_utils.batch_iou_similarity: [B, M1, 4] x [B, M2, 4] -> [B, M1, M2]
    box1, box2 = box1.unsqueeze(2), box2.unsqueeze(1)
    p1, p2, g1, g2 = box1[:, :, :, 0:2], box1[:, :, :, 2:4], box2[:, :, :, 0:2], box2[:, :, :, 2:4]
    overlap = (paddle.minimum(p2, g2) - paddle.maximum(p1, g1)).clip(0).prod(-1)
    union = (p2 - p1).clip(0).prod(-1) + (g2 - g1).clip(0).prod(-1) - overlap + EPS
    return overlap / union


def assign(pred_scores, pred_bboxes, points, gt_labels, gt_bboxes, pad_gt_mask, classes: int = CLASSES):
    batch, anchors = pred_scores.shape[0], pred_scores.shape[1]
    ious = iou_similarity(gt_bboxes, pred_bboxes)   # [B, n, L]
    batch_ind = paddle.arange(end=batch, dtype=gt_labels.dtype).unsqueeze(-1)
    labels_ind = paddle.stack([batch_ind.tile([1, BOXES]), gt_labels.squeeze(-1)], axis=-1)
    cls_scores = paddle.gather_nd(pred_scores.transpose([0, 2, 1]), labels_ind)
    metrics = cls_scores.pow(ALPHA) * ious.pow(BETA)
    x, y = points.unsqueeze([0, 1]).chunk(2, -1)   # check_points_inside_bboxes
    xmin, ymin, xmax, ymax = gt_bboxes.unsqueeze(2).chunk(4, -1)
    ltrb = paddle.concat([x - xmin, y - ymin, xmax - x, ymax - y], -1)
    is_in_gts = (ltrb.min(-1) > EPS).astype(gt_bboxes.dtype)
    _, topk_idxs = paddle.topk(metrics * is_in_gts, TOPK, axis=-1)   # gather_topk_anchors
    topk_mask = pad_gt_mask.tile([1, 1, TOPK]).astype("bool")
    topk_idxs = paddle.where(topk_mask, topk_idxs, paddle.zeros_like(topk_idxs))
    is_in_topk = F.one_hot(topk_idxs, anchors).sum(-2)
    is_in_topk = paddle.where(is_in_topk > 1, paddle.zeros_like(is_in_topk), is_in_topk).astype(metrics.dtype)
    positive = is_in_topk * is_in_gts * pad_gt_mask
    multiple = (positive.sum(-2).unsqueeze(1) > 1).tile([1, BOXES, 1])
    is_max_iou = F.one_hot(ious.argmax(-2), BOXES).transpose([0, 2, 1]).astype(ious.dtype)   # compute_max_iou_anchor
    positive = paddle.where(multiple, is_max_iou, positive)
    positive_sum = positive.sum(-2)
    gt_index = positive.argmax(-2) + batch_ind * BOXES
    labels = paddle.gather(gt_labels.flatten(), gt_index.flatten(), axis=0).reshape([batch, anchors])
    labels = paddle.where(positive_sum > 0, labels, paddle.full_like(labels, classes))
    bboxes = paddle.gather(gt_bboxes.reshape([-1, 4]), gt_index.flatten(), axis=0).reshape([batch, anchors, 4])
    scores = F.one_hot(labels, classes + 1)[:, :, :classes].astype(metrics.dtype)   # one_hot is float32 in any mode
    metrics = metrics * positive
    metrics = metrics / (metrics.max(-1, keepdim=True) + EPS) * (ious * positive).max(-1, keepdim=True)
    return labels, bboxes, scores * metrics.max(-2).unsqueeze(-1)


def giou_loss(pbox, gbox, eps: float = 1e-10):   # losses/iou_loss.py GIoULoss, reduction none
    x1, y1, x2, y2 = paddle.split(pbox, 4, axis=-1)
    x1g, y1g, x2g, y2g = paddle.split(gbox, 4, axis=-1)
    inter = ((paddle.minimum(x2, x2g) - paddle.maximum(x1, x1g)).clip(0)
             * (paddle.minimum(y2, y2g) - paddle.maximum(y1, y1g)).clip(0))
    union = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - inter + eps
    area_c = ((paddle.maximum(x2, x2g) - paddle.minimum(x1, x1g))
              * (paddle.maximum(y2, y2g) - paddle.minimum(y1, y1g)) + eps)
    return 1 - (inter / union - (area_c - union) / area_c)


def df_loss(pred_dist, target):
    left = paddle.cast(target.floor(), "int64")
    weight_left = (left + 1).astype(target.dtype) - target
    loss = (F.cross_entropy(pred_dist, left, reduction="none") * weight_left
            + F.cross_entropy(pred_dist, left + 1, reduction="none") * (1 - weight_left))
    return loss.mean(-1, keepdim=True)


class PPYOLOEHead(nn.Layer):
    def __init__(self, widths=WIDTHS):
        super().__init__()
        self.stem_cls = nn.LayerList([ESEAttn(w) for w in widths])
        self.stem_reg = nn.LayerList([ESEAttn(w) for w in widths])
        self.pred_cls = nn.LayerList([nn.Conv2D(w, CLASSES, 3, padding=1) for w in widths])
        self.pred_reg = nn.LayerList([nn.Conv2D(w, 4 * (REG_MAX + 1), 3, padding=1) for w in widths])

    def forward(self, feats, gt_class, gt_bbox, pad_gt_mask):
        scores, dists = [], []
        for i, feat in enumerate(feats):
            avg_feat = F.adaptive_avg_pool2d(feat, (1, 1))
            cls_logit = self.pred_cls[i](self.stem_cls[i](feat, avg_feat) + feat)
            reg = self.pred_reg[i](self.stem_reg[i](feat, avg_feat))
            scores.append(F.sigmoid(cls_logit).flatten(2).transpose([0, 2, 1]))
            dists.append(reg.flatten(2).transpose([0, 2, 1]))
        pred_scores, pred_dist = paddle.concat(scores, axis=1), paddle.concat(dists, axis=1)
        _, points, strides = _anchors()
        dtype = paddle.get_default_dtype()
        points, strides = paddle.assign(points.astype(dtype)), paddle.assign(strides.astype(dtype))
        points_s = points / strides
        anchors = pred_dist.shape[1]
        bins = F.softmax(pred_dist.reshape([-1, anchors, 4, REG_MAX + 1]))
        proj = paddle.assign(np.linspace(0, REG_MAX, REG_MAX + 1, dtype=dtype).reshape(1, REG_MAX + 1, 1, 1))
        distance = F.conv2d(bins.transpose([0, 3, 1, 2]), proj).squeeze(1)
        lt, rb = paddle.split(distance, 2, -1)   # batch_distance2bbox
        pred_bboxes = paddle.concat([points_s - lt, points_s + rb], -1)
        labels, bboxes, scores = assign(pred_scores.detach(), pred_bboxes.detach() * strides, points, gt_class,
                                        gt_bbox, pad_gt_mask)
        bboxes = bboxes / strides
        one_hot = F.one_hot(labels, CLASSES + 1)[:, :, :CLASSES].astype(pred_scores.dtype)
        weight = 0.75 * pred_scores.pow(2.0) * (1 - one_hot) + scores * one_hot   # varifocal
        scores_sum = paddle.clip(scores.sum(), min=1.0)
        loss_cls = F.binary_cross_entropy(pred_scores, scores, weight=weight, reduction="sum") / scores_sum
        positive = labels != CLASSES
        box_mask = positive.unsqueeze(-1).tile([1, 1, 4])
        pred_pos = paddle.masked_select(pred_bboxes, box_mask).reshape([-1, 4])
        assigned_pos = paddle.masked_select(bboxes, box_mask).reshape([-1, 4])
        box_weight = paddle.masked_select(scores.sum(-1), positive).unsqueeze(-1)
        loss_iou = (giou_loss(pred_pos, assigned_pos) * box_weight).sum() / scores_sum
        dist_mask = positive.unsqueeze(-1).tile([1, 1, 4 * (REG_MAX + 1)])
        dist_pos = paddle.masked_select(pred_dist, dist_mask).reshape([-1, 4, REG_MAX + 1])
        x1y1, x2y2 = paddle.split(bboxes, 2, -1)   # _bbox2distance
        ltrb = paddle.concat([points_s - x1y1, x2y2 - points_s], -1).clip(0, REG_MAX + 1 - 1 - 0.01)
        ltrb_pos = paddle.masked_select(ltrb, box_mask).reshape([-1, 4])
        loss_dfl = (df_loss(dist_pos, ltrb_pos) * box_weight).sum() / scores_sum
        return loss_cls + 2.5 * loss_iou + 0.5 * loss_dfl


def feed(rng, batch: int = 2) -> dict:
    """Neck features of a 64 x 64 image (strides 32, 16, 8), three gt boxes an image, the second image's last one
    padding (pad_gt_mask 0)."""
    values = {f"feat{i}": rng.standard_normal((batch, w, SIZE // s, SIZE // s)).astype("float32")
              for i, (w, s) in enumerate(zip(WIDTHS, STRIDES))}
    return {**values, **boxes(rng, batch)}


def boxes(rng, batch: int) -> dict:
    corner = rng.uniform(2, 30, (batch, BOXES, 2))
    size = rng.uniform(12, 30, (batch, BOXES, 2))
    mask = np.ones((batch, BOXES, 1), "float32")
    mask[1, -1] = 0
    return {"gt_class": rng.integers(0, CLASSES, (batch, BOXES, 1)).astype("int64"),
            "gt_bbox": np.concatenate([corner, corner + size], -1).astype("float32"), "pad_gt_mask": mask}


def detector_feed(rng, batch: int, size: int) -> dict:
    """A size x size image (normalized) and the gt boxes above, for a whole detector."""
    return {"image": rng.standard_normal((batch, 3, size, size)).astype("float32"), **boxes(rng, batch)}


def static_inputs(values: dict) -> dict:
    """A static data var for each fed array, by its name."""
    return {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in values.items()}


def build(values: dict):
    data = static_inputs(values)
    feats = [data[f"feat{i}"] for i in range(len(STRIDES))]
    return PPYOLOEHead()(feats, data["gt_class"], data["gt_bbox"], data["pad_gt_mask"])
