"""PP-PicoDet s whole, from the image to the loss (PaddleDetection's configs/picodet/picodet_s_320_coco_lcnet.yml over
_base_/picodet_v2.yml), rebuilt with Paddle's layers from ppdet/modeling/backbones/lcnet.py, necks/lc_pan.py and
csp_pan.py, heads/pico_head.py and gfl_head.py, losses/varifocal_loss.py, gfocal_loss.py and iou_loss.py:
- LCNet x0.75 (hardswish ConvBN stem, DepthwiseSeparable blocks of a depthwise and a pointwise ConvBN, the last two
  with squeeze-excitation; batch norms with L2Decay(0.0)), feature maps 3, 4, 5 (strides 8, 16, 32; 96, 192, 384
  wide);
- LCPAN 96 wide with four outputs: Channel_T's 1x1 ConvBNs, nearest upsampling and DepthwiseSeparable blocks top
  down, DPModule stride-2 downsamples and DepthwiseSeparable blocks bottom up, the fourth level (stride 64) the sum
  of two DPModules over the last input and the last output;
- PicoHeadV2 as it trains (forward_train, get_loss): per level PicoFeat (two 5x5 depthwise + 1x1 ConvNormLayers,
  hardswish, then PicoSE's gate), the class and distribution 1x1 convs over the SE feature (reg_max 7), the align
  head (a DPModule to one channel) whose sigmoid multiplies the class sigmoid under a square root; the boxes decoded
  by the Integral projection (softmax over the 8 bins, linear with linspace(0, 7)) at each level's centres.
- The TaskAlignedAssigner of tools/paddledet_ppyoloe.py (top 13, alpha 1, beta 6: PicoHeadV2 runs it past its
  static_assigner_epoch, 100 of 300, ATSS before), run inside the program on detached scores and boxes, as
  PaddleDetection's training runs it inside the model; VarifocalLoss (use_sigmoid False: binary cross entropy of the
  scores, iou-weighted, summed over classes, over the sum of the assigned scores), and on the positives (nonzero and
  gather, as get_loss picks them) GIoULoss x 2.5 and DistributionFocalLoss x 0.5 weighted by each anchor's largest
  assigned score, each over the same sum; the three summed (add_n).
4 classes, 96 x 96 images (12 x 12, 6 x 6, 3 x 3 and 2 x 2 cells), batch 2 with PP-YOLOE's gt boxes. get_loss's
`len(pos_inds)` raises in static mode (a Variable or Value has no len()): its `num_total_pos > 0` branch is taken;
the feed has positives. 96 x 96 rather than 64 x 64: a 1 x 1 stride-64 level leaves its batch norms two values a
channel, where float32 decides nothing (Paddle's own float32 gradients 1.6 times their size off its float64 ones).
For tools/zoo_train_scheduled.py."""

from __future__ import annotations

import math

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn
from paddledet_ppyoloe import _anchors, assign, detector_feed, giou_loss, static_inputs

CLASSES, REG_MAX, STRIDES, NECK, EPS, SIZE = 4, 7, (8, 16, 32, 64), 96, 1e-9, 96
LCNET = (   # blocks2 to blocks6 of lcnet.py's NET_CONFIG: kernel, in, out, stride, squeeze-excitation
    [(3, 16, 32, 1, False)], [(3, 32, 64, 2, False), (3, 64, 64, 1, False)],
    [(3, 64, 128, 2, False), (3, 128, 128, 1, False)],
    [(3, 128, 256, 2, False)] + [(5, 256, 256, 1, False)] * 5, [(5, 256, 512, 2, True), (5, 512, 512, 1, True)])
SCALE = 0.75


def make_divisible(value: float, divisor: int = 8) -> int:
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def _no_decay():
    return paddle.ParamAttr(regularizer=paddle.regularizer.L2Decay(0.0))


class ConvBN(nn.Layer):
    """lcnet.py's ConvBNLayer (batch norm L2Decay(0.0)); ``decay_norm``: csp_pan.py's (a plain BatchNorm2D)."""

    def __init__(self, channels_in, channels_out, kernel, stride=1, groups=1, act=True, decay_norm=False):
        super().__init__()
        self.conv = nn.Conv2D(channels_in, channels_out, kernel, stride, (kernel - 1) // 2, groups=groups,
                              bias_attr=False)
        norm = {} if decay_norm else {"weight_attr": _no_decay(), "bias_attr": _no_decay()}
        self.bn, self.act = nn.BatchNorm2D(channels_out, **norm), act

    def forward(self, x):
        x = self.bn(self.conv(x))
        return F.hardswish(x) if self.act else x


class SEModule(nn.Layer):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2D(channels, channels // 4, 1), nn.Conv2D(channels // 4, channels, 1)

    def forward(self, x):
        return x * F.hardsigmoid(self.conv2(F.relu(self.conv1(F.adaptive_avg_pool2d(x, 1)))))


class DepthwiseSeparable(nn.Layer):
    def __init__(self, channels_in, channels_out, stride, kernel, se):
        super().__init__()
        self.dw_conv = ConvBN(channels_in, channels_in, kernel, stride, groups=channels_in)
        self.se = SEModule(channels_in) if se else None
        self.pw_conv = ConvBN(channels_in, channels_out, 1)

    def forward(self, x):
        x = self.dw_conv(x)
        return self.pw_conv(self.se(x) if self.se else x)


class DPModule(nn.Layer):   # csp_pan.py: a "depthwise" conv of groups out_channel, a 1x1 conv, plain batch norms
    def __init__(self, channels_in, channels_out, kernel, stride, act_out=True):
        super().__init__()
        self.dw = ConvBN(channels_in, channels_out, kernel, stride, groups=channels_out, decay_norm=True)
        self.pw = ConvBN(channels_out, channels_out, 1, act=act_out, decay_norm=True)

    def forward(self, x):
        return self.pw(self.dw(x))


class LCNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv1 = ConvBN(3, make_divisible(16 * SCALE), 3, 2)
        self.blocks = nn.LayerList([nn.Sequential(*[
            DepthwiseSeparable(make_divisible(c_in * SCALE), make_divisible(c_out * SCALE), s, k, se)
            for k, c_in, c_out, s, se in config]) for config in LCNET])

    def forward(self, x):
        outs, x = [], self.conv1(x)
        for i, block in enumerate(self.blocks):
            x = block(x)
            if i >= 2:   # blocks4 to blocks6: feature_maps [3, 4, 5]
                outs.append(x)
        return outs


class LCPAN(nn.Layer):
    def __init__(self, widths_in, width: int = NECK, kernel: int = 5):
        super().__init__()
        self.conv_t = nn.LayerList([ConvBN(w, width, 1, decay_norm=True) for w in widths_in])
        self.first_top_conv, self.second_top_conv = DPModule(width, width, kernel, 2), DPModule(width, width, kernel, 2)

        def blocks():
            return nn.Sequential(DepthwiseSeparable(width * 2, width * 2, 1, kernel, False),
                                 DepthwiseSeparable(width * 2, width, 1, kernel, False))
        levels = len(widths_in)
        self.top_down_blocks = nn.LayerList([blocks() for _ in range(levels - 1)])
        self.downsamples = nn.LayerList([DPModule(width, width, kernel, 2) for _ in range(levels - 1)])
        self.bottom_up_blocks = nn.LayerList([blocks() for _ in range(levels - 1)])

    def forward(self, feats):
        inputs = [conv(feat) for conv, feat in zip(self.conv_t, feats)]
        inner = [inputs[-1]]
        for idx in range(len(inputs) - 1, 0, -1):
            up = F.interpolate(inner[0], scale_factor=2, mode="nearest")
            inner.insert(0, self.top_down_blocks[len(inputs) - 1 - idx](paddle.concat([up, inputs[idx - 1]], 1)))
        outs = [inner[0]]
        for idx in range(len(inputs) - 1):
            down = self.downsamples[idx](outs[-1])
            outs.append(self.bottom_up_blocks[idx](paddle.concat([down, inner[idx + 1]], 1)))
        return outs + [self.first_top_conv(inputs[-1]) + self.second_top_conv(outs[-1])]


class PicoFeat(nn.Layer):   # num_convs 2, share_cls_reg, use_se; ConvNormLayer's norms L2Decay(0.0)
    def __init__(self, width: int = NECK, convs: int = 2):
        super().__init__()
        self.convs = nn.LayerList([nn.LayerList([
            ConvBN(width, width, kernel, groups=width if kernel == 5 else 1, act=False)
            for _ in range(convs) for kernel in (5, 1)]) for _ in STRIDES])
        self.se_fc = nn.LayerList([nn.Conv2D(width, width, 1) for _ in STRIDES])
        self.se_conv = nn.LayerList([ConvBN(width, width, 1, act=False) for _ in STRIDES])

    def forward(self, feat, level: int):
        for conv in self.convs[level]:
            feat = F.hardswish(conv(feat))
        gate = F.sigmoid(self.se_fc[level](F.adaptive_avg_pool2d(feat, (1, 1))))   # PicoSE
        return feat, F.hardswish(self.se_conv[level](feat * gate))


def bbox2distance(points, bbox, max_dis: float, eps: float = 0.1):   # bbox_utils.py
    left, top = points[:, 0] - bbox[:, 0], points[:, 1] - bbox[:, 1]
    right, bottom = bbox[:, 2] - points[:, 0], bbox[:, 3] - points[:, 1]
    return paddle.stack([d.clip(min=0, max=max_dis - eps) for d in (left, top, right, bottom)], -1)


def dfl(pred, label):   # gfocal_loss.distribution_focal_loss
    left = label.cast("int64")
    right = left + 1
    return (F.cross_entropy(pred, left, reduction="none") * (right.cast(label.dtype) - label)
            + F.cross_entropy(pred, right, reduction="none") * (label - left.cast(label.dtype)))


class PicoHeadV2(nn.Layer):
    def __init__(self, width: int = NECK):
        super().__init__()
        self.conv_feat = PicoFeat(width)
        prior = paddle.ParamAttr(initializer=nn.initializer.Constant(-math.log((1 - 0.01) / 0.01)))   # prior_prob
        self.head_cls = nn.LayerList([nn.Conv2D(width, CLASSES, 1, bias_attr=prior) for _ in STRIDES])
        self.head_reg = nn.LayerList([nn.Conv2D(width, 4 * (REG_MAX + 1), 1) for _ in STRIDES])
        self.cls_align = nn.LayerList([DPModule(width, 1, 5, 1, act_out=False) for _ in STRIDES])

    def project(self, reg):   # gfl_head.Integral
        bins = F.softmax(reg.reshape([-1, REG_MAX + 1]), axis=1)
        return F.linear(bins, paddle.linspace(0, REG_MAX, REG_MAX + 1, dtype=reg.dtype)).reshape([-1, 4])

    def forward(self, feats, gt_class, gt_bbox, pad_gt_mask):
        dtype = paddle.get_default_dtype()
        scores, regs, bboxes = [], [], []
        for i, (feat, stride) in enumerate(zip(feats, STRIDES)):
            batch, _, height, width = feat.shape
            conv_feat, se_feat = self.conv_feat(feat, i)
            cls_logit, reg = self.head_cls[i](se_feat), self.head_reg[i](se_feat)
            score = (F.sigmoid(cls_logit) * F.sigmoid(self.cls_align[i](conv_feat)) + EPS).sqrt()
            shift_x = (np.arange(width, dtype=dtype) + 0.5) * stride   # get_single_level_center_point
            shift_y = (np.arange(height, dtype=dtype) + 0.5) * stride
            x, y = np.meshgrid(shift_x, shift_y)
            centers = paddle.assign(np.stack([x.ravel(), y.ravel()], -1))
            distance = (self.project(reg.transpose([0, 2, 3, 1])) * stride).reshape([batch, height * width, 4])
            lt, rb = paddle.split(distance, 2, -1)   # batch_distance2bbox
            box = paddle.concat([-lt + centers, rb + centers], -1)
            scores.append(score.flatten(2).transpose([0, 2, 1]))
            regs.append(reg.flatten(2).transpose([0, 2, 1]))
            bboxes.append(box / stride)
        pred_scores, pred_regs = paddle.concat(scores, axis=1), paddle.concat(regs, axis=1)
        pred_bboxes = paddle.concat(bboxes, axis=1)
        return self.loss(pred_scores, pred_regs, pred_bboxes, gt_class, gt_bbox, pad_gt_mask)

    def loss(self, pred_scores, pred_regs, pred_bboxes, gt_class, gt_bbox, pad_gt_mask):
        dtype = paddle.get_default_dtype()
        _, points, strides = _anchors(STRIDES, SIZE)
        centers, strides = paddle.assign(points.astype(dtype)), paddle.assign(strides.astype(dtype))
        labels, bboxes, assigned = assign(pred_scores.detach(), pred_bboxes.detach() * strides, centers, gt_class,
                                          gt_bbox, pad_gt_mask, CLASSES)
        bboxes = bboxes / strides
        batch, anchors = pred_scores.shape[0], pred_scores.shape[1]
        flat_centers = centers.expand([batch, anchors, 2]).reshape([-1, 2])
        flat_strides = strides.expand([batch, anchors, 1]).reshape([-1, 1])
        flat_labels, flat_assigned = labels.reshape([-1]), assigned.reshape([-1, CLASSES])
        pos = paddle.nonzero(paddle.logical_and(flat_labels >= 0, flat_labels < CLASSES)).squeeze(1)
        pos_targets = paddle.gather(bboxes.reshape([-1, 4]), pos, axis=0)
        pos_boxes = paddle.gather(pred_bboxes.reshape([-1, 4]), pos, axis=0)
        pos_reg = paddle.gather(pred_regs.reshape([-1, 4 * (REG_MAX + 1)]), pos, axis=0)
        pos_centers = paddle.gather(flat_centers, pos, axis=0) / paddle.gather(flat_strides, pos, axis=0)
        weight = paddle.gather(flat_assigned.detach().max(axis=1, keepdim=True), pos, axis=0)
        corners = bbox2distance(pos_centers, pos_targets, REG_MAX).reshape([-1])
        loss_bbox = paddle.sum(giou_loss(pos_boxes, pos_targets) * 2.5 * weight)
        loss_dfl = (0.5 * dfl(pos_reg.reshape([-1, REG_MAX + 1]), corners)
                    * weight.expand([-1, 4]).reshape([-1])).sum() / 4.0
        avg_factor = flat_assigned.sum()
        pred, target = pred_scores.reshape([-1, CLASSES]), flat_assigned.cast(dtype)   # varifocal_loss
        focal = (target * (target > 0.0).cast(dtype)
                 + 0.75 * (pred - target).abs().pow(2.0) * (target <= 0.0).cast(dtype))
        loss_vfl = (F.binary_cross_entropy(pred, target, reduction="none") * focal).sum(axis=1).sum() / avg_factor
        return paddle.add_n([loss_vfl, loss_bbox / avg_factor, loss_dfl / avg_factor])


class PicoDet(nn.Layer):
    def __init__(self):
        super().__init__()
        widths = [make_divisible(config[-1][2] * SCALE) for config in LCNET[2:]]
        self.backbone, self.neck, self.head = LCNet(), LCPAN(widths), PicoHeadV2()

    def forward(self, image, gt_class, gt_bbox, pad_gt_mask):
        return self.head(self.neck(self.backbone(image)), gt_class, gt_bbox, pad_gt_mask)


def whole_feed(rng, batch: int = 2) -> dict:
    return detector_feed(rng, batch, SIZE)


def whole(values: dict):
    return PicoDet()(**static_inputs(values))
