"""PaddleSeg's PP-LiteSeg with its STDC1 backbone as it trains (configs/pp_liteseg/
pp_liteseg_stdc1_cityscapes_1024x512_scale0.5_160k.yml), from the image to the loss: STDCNet (backbones/stdcnet.py,
layers [2, 2, 2], base 64, block_num 4, "cat": two stride-2 ConvBNReLU, then CatBottlenecks whose stride-2 form runs a
depthwise stride-2 conv with batch norm after the first 1x1 and an average-pooled skip of it, the four branches
concatenated; features 64, 256, 512, 1024 wide at strides 4 to 32), the PP-LiteSeg head (models/pp_liteseg.py: the
context module of adaptive average pools to 1, 2 and 4 upsampled bilinearly and summed; three UAFM_SpAtten fusions,
each a ConvBNReLU of the low feature, the high one upsampled bilinearly, a spatial attention from the channel means
and maxima of both (ConvBNReLU 4 to 2, ConvBN 2 to 1, sigmoid) weighing x against y, a ConvBNReLU out; arm_out_chs
32, 64, 128), three SegHeads upsampled to the image, and OhemCrossEntropyLoss on each (losses/
ohem_cross_entropy_loss.py: the label's softmax probability, the min_kept-th smallest as the threshold when above
0.7, cross entropy over the pixels below it). Its `if self.min_kept < num_valid` (a Python branch on a tensor) takes
the OHEM path, which the batch (no ignored pixels, more than min_kept) always does, and its `prob[threshold_index]`
with a Python index is the sorted probabilities' element. A 64 x 64 image, 4 classes, min_kept scaled to the batch
as the config's note scales it (batch x height x width / 16). For tools/zoo_train_scheduled.py."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

SIZE, CLASSES, BATCH, THRESH = 64, 4, 2, 0.7
MIN_KEPT = BATCH * SIZE * SIZE // 16


class ConvBN(nn.Layer):
    def __init__(self, channels_in: int, channels_out: int, kernel: int = 3, stride: int = 1, groups: int = 1,
                 relu: bool = True):
        super().__init__()
        self.conv = nn.Conv2D(channels_in, channels_out, kernel, stride, kernel // 2, groups=groups, bias_attr=False)
        self.bn, self.relu = nn.BatchNorm2D(channels_out), relu

    def forward(self, x):
        x = self.bn(self.conv(x))
        return F.relu(x) if self.relu else x


class CatBottleneck(nn.Layer):   # block_num 4
    def __init__(self, channels_in: int, channels_out: int, stride: int):
        super().__init__()
        half, quarter, eighth = channels_out // 2, channels_out // 4, channels_out // 8
        self.stride = stride
        self.convs = nn.LayerList([ConvBN(channels_in, half, 1), ConvBN(half, quarter), ConvBN(quarter, eighth),
                                   ConvBN(eighth, eighth)])
        if stride == 2:
            self.avd = ConvBN(half, half, 3, 2, groups=half, relu=False)

    def forward(self, x):
        first = self.convs[0](x)
        out = self.convs[1](self.avd(first) if self.stride == 2 else first)
        outs = [F.avg_pool2d(first, 3, 2, 1) if self.stride == 2 else first, out]
        for conv in self.convs[2:]:
            out = conv(out)
            outs.append(out)
        return paddle.concat(outs, axis=1)


class STDC1(nn.Layer):
    def __init__(self, base: int = 64):
        super().__init__()
        self.x2, self.x4 = ConvBN(3, base // 2, 3, 2), ConvBN(base // 2, base, 3, 2)
        widths = (base, base * 4, base * 8, base * 16)
        self.stages = nn.LayerList([nn.Sequential(CatBottleneck(widths[i], widths[i + 1], 2),
                                                  CatBottleneck(widths[i + 1], widths[i + 1], 1)) for i in range(3)])

    def forward(self, x):
        x = self.x4(self.x2(x))
        outs = []
        for stage in self.stages:
            x = stage(x)
            outs.append(x)
        return outs   # strides 8, 16, 32: the head's backbone_indices [2, 3, 4]


class ContextModule(nn.Layer):
    def __init__(self, channels_in: int, width: int, bins=(1, 2, 4)):
        super().__init__()
        self.bins = bins
        self.stages = nn.LayerList([ConvBN(channels_in, width, 1) for _ in bins])
        self.conv_out = ConvBN(width, width)

    def forward(self, x):
        out = None
        for size, conv in zip(self.bins, self.stages):
            y = F.interpolate(conv(F.adaptive_avg_pool2d(x, size)), x.shape[2:], mode="bilinear", align_corners=False)
            out = y if out is None else out + y
        return self.conv_out(out)


class UAFMSpatial(nn.Layer):
    def __init__(self, low: int, high: int, width: int):
        super().__init__()
        self.conv_x, self.conv_out = ConvBN(low, high), ConvBN(high, width)
        self.attention = nn.Sequential(ConvBN(4, 2), ConvBN(2, 1, relu=False))

    def forward(self, x, y):
        x = self.conv_x(x)
        y = F.interpolate(y, x.shape[2:], mode="bilinear")
        reduced = [op(t, axis=1, keepdim=True) for t in (x, y) for op in (paddle.mean, paddle.max)]
        weight = F.sigmoid(self.attention(paddle.concat(reduced, axis=1)))
        return self.conv_out(x * weight + y * (1 - weight))


class SegHead(nn.Layer):
    def __init__(self, width: int, mid: int):
        super().__init__()
        self.conv, self.conv_out = ConvBN(width, mid), nn.Conv2D(mid, CLASSES, 1, bias_attr=False)

    def forward(self, x):
        return self.conv_out(self.conv(x))


class PPLiteSeg(nn.Layer):
    def __init__(self, arm=(32, 64, 128), heads=(32, 64, 64), context: int = 128):
        super().__init__()
        self.backbone, features = STDC1(), (256, 512, 1024)
        self.context = ContextModule(features[-1], context)
        highs = (*arm[1:], context)
        self.arms = nn.LayerList([UAFMSpatial(features[i], highs[i], arm[i]) for i in range(3)])
        self.seg_heads = nn.LayerList([SegHead(a, m) for a, m in zip(arm, heads)])

    def forward(self, image, label):
        feats = self.backbone(image)
        high, fused = self.context(feats[-1]), []
        for i in reversed(range(3)):
            high = self.arms[i](feats[i], high)
            fused.insert(0, high)
        logits = [F.interpolate(head(x), image.shape[2:], mode="bilinear", align_corners=False)
                  for head, x in zip(self.seg_heads, fused)]
        return sum(ohem_cross_entropy(logit, label) for logit in logits)


def ohem_cross_entropy(logit, label, eps: float = 1e-5):
    n, c, h, w = logit.shape
    flat = label.reshape([-1])
    prob = F.softmax(logit, axis=1).transpose([1, 0, 2, 3]).reshape([c, -1])
    prob = (prob * F.one_hot(flat, c).transpose([1, 0]).astype(prob.dtype)).sum(axis=0)
    threshold = paddle.maximum(paddle.sort(prob)[MIN_KEPT - 1], paddle.full([], THRESH, prob.dtype))
    kept = (prob < threshold).astype("int64")
    ignored = 255
    target = (flat * kept + (1 - kept) * ignored).reshape([n, 1, h, w])
    mask = kept.reshape([n, 1, h, w]).astype(logit.dtype)
    loss = F.softmax_with_cross_entropy(logit, target, ignore_index=ignored, axis=1) * mask
    return paddle.mean(loss) / (paddle.mean(mask) + eps)


def whole_feed(rng) -> dict:
    """A normalized image and a label map of rectangles of four classes."""
    label = np.zeros((BATCH, SIZE, SIZE), "int64")
    for b in range(BATCH):
        for cls in range(1, CLASSES):
            top, left = rng.integers(0, SIZE - 16, 2)
            label[b, top:top + rng.integers(8, 24), left:left + rng.integers(8, 24)] = cls
    return {"image": rng.standard_normal((BATCH, 3, SIZE, SIZE)).astype("float32"), "label": label}


def whole(values: dict):
    data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in values.items()}
    return PPLiteSeg()(**data)
