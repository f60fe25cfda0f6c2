"""PaddleOCR's DB text detector as it trains (det_mv3_db.yml): DBFPN (1x1 lateral convs, nearest upsampling, 3x3
convs to a quarter of the width, the four levels upsampled and concatenated), DBHead in training mode (the binarize
and thresh heads: conv, batch norm with ReLU, two 2x2 transposed convs, sigmoid; the step function
1 / (1 + exp(-50 (P - T)))) and DBLoss as the config sets it (main_loss_type DiceLoss, alpha 5, beta 10, ohem_ratio 3):
5 x BalanceLoss of the shrink map (over its main loss, the Dice loss, with hard negatives: the positive count times 3,
at most the negatives there are), 10 x MaskL1Loss of the threshold map, and the Dice loss of the binary map. Rebuilt
with Paddle's layers from PaddleOCR's ppocr/modeling/necks/db_fpn.py, ppocr/modeling/heads/det_db_head.py,
ppocr/losses/det_db_loss.py and det_basic_loss.py (main branch); the backbone is left out, the four feature maps it
gives fed (a 64 x 64 image: 16 x 16 to 2 x 2), widths shrunk. BalanceLoss counts in Python (`int(positive.sum())`,
dygraph only) and keeps the largest negative losses by `sort(descending=True)[:count]`: in static mode the counts stay
tensors and the sorted losses are summed below a mask of the first `count` ranks. For tools/zoo_train_static.py."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

LEVELS, FPN, SIZE = (8, 16, 32, 64), 32, 64


class DBFPN(nn.Layer):
    def __init__(self):
        super().__init__()
        kaiming = paddle.ParamAttr(initializer=nn.initializer.KaimingUniform())
        self.ins = nn.LayerList([nn.Conv2D(c, FPN, 1, weight_attr=kaiming, bias_attr=False) for c in LEVELS])
        self.outs = nn.LayerList([nn.Conv2D(FPN, FPN // 4, 3, padding=1, weight_attr=kaiming, bias_attr=False)
                                  for _ in LEVELS])

    def forward(self, c2, c3, c4, c5):
        in2, in3, in4, in5 = (conv(c) for conv, c in zip(self.ins, (c2, c3, c4, c5)))
        out4 = in4 + F.upsample(in5, scale_factor=2, mode="nearest", align_mode=1)
        out3 = in3 + F.upsample(out4, scale_factor=2, mode="nearest", align_mode=1)
        out2 = in2 + F.upsample(out3, scale_factor=2, mode="nearest", align_mode=1)
        p2, p3, p4, p5 = (conv(x) for conv, x in zip(self.outs, (out2, out3, out4, in5)))
        p5 = F.upsample(p5, scale_factor=8, mode="nearest", align_mode=1)
        p4 = F.upsample(p4, scale_factor=4, mode="nearest", align_mode=1)
        p3 = F.upsample(p3, scale_factor=2, mode="nearest", align_mode=1)
        return paddle.concat([p5, p4, p3, p2], axis=1)


def _bias(width: int):
    bound = 1.0 / np.sqrt(width)
    return paddle.ParamAttr(initializer=nn.initializer.Uniform(-bound, bound))


class Head(nn.Layer):
    def __init__(self, width: int):
        super().__init__()
        quarter = width // 4
        one, small = nn.initializer.Constant(1.0), nn.initializer.Constant(1e-4)
        kaiming = paddle.ParamAttr(initializer=nn.initializer.KaimingUniform())
        self.conv1 = nn.Conv2D(width, quarter, 3, padding=1, bias_attr=False)
        dtype = paddle.get_default_dtype()   # the legacy nn.BatchNorm's own default is float32
        self.conv_bn1 = nn.BatchNorm(quarter, act="relu", param_attr=paddle.ParamAttr(initializer=one),
                                     bias_attr=paddle.ParamAttr(initializer=small), dtype=dtype)
        self.conv2 = nn.Conv2DTranspose(quarter, quarter, 2, stride=2, weight_attr=kaiming, bias_attr=_bias(quarter))
        self.conv_bn2 = nn.BatchNorm(quarter, act="relu", param_attr=paddle.ParamAttr(initializer=one),
                                     bias_attr=paddle.ParamAttr(initializer=small), dtype=dtype)
        self.conv3 = nn.Conv2DTranspose(quarter, 1, 2, stride=2, weight_attr=kaiming, bias_attr=_bias(quarter))

    def forward(self, x):
        return F.sigmoid(self.conv3(self.conv_bn2(self.conv2(self.conv_bn1(self.conv1(x))))))


def balance(pred, gt, mask, ratio: float = 3.0, eps: float = 1e-6):
    positive, negative = gt * mask, (1 - gt) * mask
    positive_count = positive.sum().floor()
    negative_count = paddle.minimum(negative.sum(), positive_count * ratio).floor()
    loss = dice(pred, gt, mask)   # the config's main_loss_type: one value, which every pixel weighs
    negative_loss = paddle.sort((negative * loss).reshape([-1]), descending=True)
    ranks = paddle.arange(negative_loss.shape[0], dtype=negative_loss.dtype)
    kept = (negative_loss * (ranks < negative_count).astype(negative_loss.dtype)).sum()
    return ((positive * loss).sum() + kept) / (positive_count + negative_count + eps)


def dice(pred, gt, mask, eps: float = 1e-6):
    intersection = paddle.sum(pred * gt * mask)
    return 1 - 2.0 * intersection / (paddle.sum(pred * mask) + paddle.sum(gt * mask) + eps)


def mask_l1(pred, gt, mask, eps: float = 1e-6):
    return paddle.mean((paddle.abs(pred - gt) * mask).sum() / (mask.sum() + eps))


class DBNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.neck, self.binarize, self.thresh = DBFPN(), Head(FPN), Head(FPN)

    def forward(self, c2, c3, c4, c5, shrink_map, shrink_mask, threshold_map, threshold_mask):
        fused = self.neck(c2, c3, c4, c5)
        shrink, threshold = self.binarize(fused), self.thresh(fused)
        binary = paddle.reciprocal(1 + paddle.exp(-50 * (shrink - threshold)))
        maps = paddle.concat([shrink, threshold, binary], axis=1)   # DBHead's training output, as DBLoss reads it
        loss_shrink = balance(maps[:, 0, :, :], shrink_map, shrink_mask)
        loss_threshold = mask_l1(maps[:, 1, :, :], threshold_map, threshold_mask)
        loss_binary = dice(maps[:, 2, :, :], shrink_map, shrink_mask)
        return 5 * loss_shrink + 10 * loss_threshold + loss_binary


def feed(rng, batch: int = 2) -> dict:
    """Backbone features of a 64 x 64 image, two text boxes an image: shrink map 1 inside them, a threshold map of
    0.3 to 0.7 on a band around them and its mask, one ignored region (shrink mask 0)."""
    values = {f"c{i + 2}": rng.standard_normal((batch, c, SIZE // 4 >> i, SIZE // 4 >> i)).astype("float32")
              for i, c in enumerate(LEVELS)}
    shrink = np.zeros((batch, SIZE, SIZE), "float32")
    band = np.zeros_like(shrink)
    for b in range(batch):
        for _ in range(2):
            top, left = rng.integers(4, SIZE - 20, 2)
            height, width = rng.integers(6, 14), rng.integers(10, 16)
            shrink[b, top:top + height, left:left + width] = 1
            band[b, top - 3:top + height + 3, left - 3:left + width + 3] = 1
    shrink_mask = np.ones_like(shrink)
    shrink_mask[:, 56:60, 4:12] = 0
    threshold = (0.3 + 0.4 * rng.random(shrink.shape) * band).astype("float32")
    return {**values, "shrink_map": shrink, "shrink_mask": shrink_mask, "threshold_map": threshold,
            "threshold_mask": band}


def build(values: dict):
    data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in values.items()}
    return DBNet()(**data)
