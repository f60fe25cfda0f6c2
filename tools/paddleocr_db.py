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
tensors and the sorted losses are summed below a mask of the first `count` ranks. For tools/zoo_train_static.py.

`whole()` is the detector from the image: det_mv3_db.yml's backbone (ppocr/modeling/backbones/det_mobilenet_v3.py,
MobileNetV3 large at scale 0.5: a stride-2 hardswish stem, fifteen inverted residual units with squeeze-excitation
where the table says, a last 1x1 conv to 480 wide, the four stage outputs 16, 24, 56 and 480 wide) and the config's
DBFPN 256 wide, for tools/zoo_train_scheduled.py."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

LEVELS, FPN, SIZE = (8, 16, 32, 64), 32, 64


class DBFPN(nn.Layer):
    def __init__(self, levels=LEVELS, width: int = FPN):
        super().__init__()
        kaiming = paddle.ParamAttr(initializer=nn.initializer.KaimingUniform())
        self.ins = nn.LayerList([nn.Conv2D(c, width, 1, weight_attr=kaiming, bias_attr=False) for c in levels])
        self.outs = nn.LayerList([nn.Conv2D(width, width // 4, 3, padding=1, weight_attr=kaiming, bias_attr=False)
                                  for _ in levels])

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
    def __init__(self, width: int, fix_nan: bool = False):
        super().__init__()
        self.fix_nan = fix_nan   # PP-OCRv4 det's: NaNs after each batch norm become zeros in training
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
        x = self.conv_bn1(self.conv1(x))
        if self.fix_nan:
            x = paddle.where(paddle.isnan(x), paddle.zeros_like(x), x)
        x = self.conv_bn2(self.conv2(x))
        if self.fix_nan:
            x = paddle.where(paddle.isnan(x), paddle.zeros_like(x), x)
        return F.sigmoid(self.conv3(x))


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
    def __init__(self, levels=LEVELS, width: int = FPN, neck=None, fix_nan: bool = False):
        super().__init__()
        self.neck = neck or DBFPN(levels, width)
        self.binarize, self.thresh = Head(width, fix_nan), Head(width, fix_nan)

    def forward(self, c2, c3, c4, c5, shrink_map, shrink_mask, threshold_map, threshold_mask):
        fused = self.neck(c2, c3, c4, c5)
        shrink, threshold = self.binarize(fused), self.thresh(fused)
        binary = paddle.reciprocal(1 + paddle.exp(-50 * (shrink - threshold)))
        maps = paddle.concat([shrink, threshold, binary], axis=1)   # DBHead's training output, as DBLoss reads it
        loss_shrink = balance(maps[:, 0, :, :], shrink_map, shrink_mask)
        loss_threshold = mask_l1(maps[:, 1, :, :], threshold_map, threshold_mask)
        loss_binary = dice(maps[:, 2, :, :], shrink_map, shrink_mask)
        return 5 * loss_shrink + 10 * loss_threshold + loss_binary


def _divisible(value: float, divisor: int = 8) -> int:   # the backbone's make_divisible
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


class ConvBN(nn.Layer):   # det_mobilenet_v3's ConvBNLayer: conv without bias, legacy batch norm, the activation
    def __init__(self, channels_in: int, channels_out: int, kernel: int, stride: int = 1, groups: int = 1,
                 act: str | None = None):
        super().__init__()
        self.conv = nn.Conv2D(channels_in, channels_out, kernel, stride, (kernel - 1) // 2, groups=groups,
                              bias_attr=False)
        self.bn, self.act = nn.BatchNorm(channels_out, dtype=paddle.get_default_dtype()), act

    def forward(self, x):
        x = self.bn(self.conv(x))
        return {"relu": F.relu, "hardswish": F.hardswish, None: lambda y: y}[self.act](x)


class SqueezeExcite(nn.Layer):
    def __init__(self, channels: int):
        super().__init__()
        self.reduce, self.expand = nn.Conv2D(channels, channels // 4, 1), nn.Conv2D(channels // 4, channels, 1)

    def forward(self, x):
        return x * F.hardsigmoid(self.expand(F.relu(self.reduce(F.adaptive_avg_pool2d(x, 1)))))


class ResidualUnit(nn.Layer):
    def __init__(self, channels_in: int, mid: int, channels_out: int, kernel: int, stride: int, se: bool, act: str):
        super().__init__()
        self.expand = ConvBN(channels_in, mid, 1, act=act)
        self.depthwise = ConvBN(mid, mid, kernel, stride, groups=mid, act=act)
        self.se = SqueezeExcite(mid) if se else None
        self.linear = ConvBN(mid, channels_out, 1)
        self.shortcut = stride == 1 and channels_in == channels_out

    def forward(self, x):
        y = self.depthwise(self.expand(x))
        y = self.linear(self.se(y) if self.se is not None else y)
        return x + y if self.shortcut else y


LARGE = [   # kernel, expansion, channels, squeeze-excite, activation, stride
    (3, 16, 16, False, "relu", 1), (3, 64, 24, False, "relu", 2), (3, 72, 24, False, "relu", 1),
    (5, 72, 40, True, "relu", 2), (5, 120, 40, True, "relu", 1), (5, 120, 40, True, "relu", 1),
    (3, 240, 80, False, "hardswish", 2), (3, 200, 80, False, "hardswish", 1), (3, 184, 80, False, "hardswish", 1),
    (3, 184, 80, False, "hardswish", 1), (3, 480, 112, True, "hardswish", 1), (3, 672, 112, True, "hardswish", 1),
    (5, 672, 160, True, "hardswish", 2), (5, 960, 160, True, "hardswish", 1), (5, 960, 160, True, "hardswish", 1)]


class MobileNetV3(nn.Layer):
    """Large, ``scale`` 0.5: a new stage starts at each stride-2 unit after the third; the last ends with a 1x1 conv."""

    def __init__(self, scale: float = 0.5):
        super().__init__()
        width = _divisible(16 * scale)
        self.stem = ConvBN(3, width, 3, 2, act="hardswish")
        stages, units, self.widths = [], [], []
        for i, (kernel, expansion, channels, se, act, stride) in enumerate(LARGE):
            if stride == 2 and i > 2:
                stages.append(nn.Sequential(*units))
                self.widths.append(width)
                units = []
            units.append(ResidualUnit(width, _divisible(scale * expansion), _divisible(scale * channels), kernel,
                                      stride, se, act))
            width = _divisible(scale * channels)
        units.append(ConvBN(width, _divisible(scale * 960), 1, act="hardswish"))
        stages.append(nn.Sequential(*units))
        self.widths.append(_divisible(scale * 960))
        self.stages = nn.LayerList(stages)

    def forward(self, x):
        outs, x = [], self.stem(x)
        for stage in self.stages:
            x = stage(x)
            outs.append(x)
        return outs


class Detector(nn.Layer):
    def __init__(self):
        super().__init__()
        self.backbone = MobileNetV3()
        self.net = DBNet(tuple(self.backbone.widths), 256)

    def forward(self, image, **maps):
        return self.net(*self.backbone(image), **maps)


def whole_feed(rng, batch: int = 2) -> dict:
    """An image normalized as the config's NormalizeImage leaves it, and the maps of ``feed``."""
    return {"image": rng.standard_normal((batch, 3, SIZE, SIZE)).astype("float32"), **_maps(rng, batch)}


def whole(values: dict):
    data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in values.items()}
    return Detector()(**data)


def feed(rng, batch: int = 2) -> dict:
    """Backbone features of a 64 x 64 image, two text boxes an image: shrink map 1 inside them, a threshold map of
    0.3 to 0.7 on a band around them and its mask, one ignored region (shrink mask 0)."""
    values = {f"c{i + 2}": rng.standard_normal((batch, c, SIZE // 4 >> i, SIZE // 4 >> i)).astype("float32")
              for i, c in enumerate(LEVELS)}
    return {**values, **_maps(rng, batch)}


def _maps(rng, batch: int) -> dict:
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
    return {"shrink_map": shrink, "shrink_mask": shrink_mask, "threshold_map": threshold,
            "threshold_mask": band}


def build(values: dict):
    data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in values.items()}
    return DBNet()(**data)
