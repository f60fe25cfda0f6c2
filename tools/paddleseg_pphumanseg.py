"""PaddleSeg's PP-HumanSeg v2 Lite as it trains (contrib/PP-HumanSeg/configs/portrait_pp_humansegv2_lite.yml), from the
image to the loss: MobileSeg (models/mobileseg.py) over MobileNetV3_large_x1_0 (backbones/mobilenetv3.py: a hardswish
stride-2 stem, fifteen ResidualUnits of a 1x1 expand ConvBN, a depthwise ConvBN with padding "same" (SAME padding, the
extra cell bottom/right at stride 2), squeeze-excitation (relu, hardsigmoid) where the table says, a linear 1x1
ConvBN and the shortcut where shapes allow; its ConvBNLayer applies hardswish whatever the table's "relu" says, and
its batch norms are L2Decay(0.0)); backbone_indices [0, 1, 2] take the 24, 40 and 112 wide features at strides 4, 8
and 16, so the last three units (160 wide) run but train nothing. MobileSegHead: MobileContextModule (adaptive
average pools to 1, 2 and 4, each a 1x1 ConvBNReLU with bias to 128, upsampled bilinearly and summed, then a
SeparableConvBNReLU), three UAFMMobile fusions (a SeparableConvBNReLU of the low feature, the high one upsampled
bilinearly and added, a SeparableConvBNReLU out; arm_out_chs 32, 64, 128) and use_last_fuse (the two coarser
outputs through SeparableConvBNReLUs to 32, upsampled, concatenated with the finest, one more SeparableConvBNReLU);
SegHeads (seg_head_inter_chs 16, 32, 32) upsampled to the image. The loss: MixedLoss on each of the three logits,
0.8 x CrossEntropyLoss (losses/cross_entropy_loss.py: per-pixel cross entropy over the non-ignored mean) + 0.2 x
LovaszSoftmaxLoss (losses/lovasz_loss.py: softmax, the valid pixels by nonzero and gather, per class the errors
sorted descending by argsort, the Lovasz gradient from the sorted foreground's cumulative sums as a constant
weight), summed with coef [1, 1, 1]. Its Python branches on tensors take the path the batch takes: both classes
are present ('present'), pixels exist. The cross entropy's mask is cast to the logit's dtype (PaddleSeg writes
'float32', which would not multiply a float64 loss). A 72 x 128 image (half the config's 144 x 256, its aspect),
whose stride-16 feature is 5 x 8: a 64 x 64 one leaves 4 x 4. For tools/zoo_train_scheduled.py."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn
from paddledet_picodet import SEModule
from paddleseg_ppliteseg import ContextModule  # MobileNetV3's squeeze-excitation is LCNet's, as in PaddleClas

HEIGHT, WIDTH, CLASSES, BATCH, IGNORE = 72, 128, 2, 2, 255
LARGE = (   # backbones/mobilenetv3.py's "large" table: kernel, expansion, out, squeeze-excitation, stride
    (3, 16, 16, False, 1), (3, 64, 24, False, 2), (3, 72, 24, False, 1), (5, 72, 40, True, 2),
    (5, 120, 40, True, 1), (5, 120, 40, True, 1), (3, 240, 80, False, 2), (3, 200, 80, False, 1),
    (3, 184, 80, False, 1), (3, 184, 80, False, 1), (3, 480, 112, True, 1), (3, 672, 112, True, 1),
    (5, 672, 160, True, 2), (5, 960, 160, True, 1), (5, 960, 160, True, 1))
OUT_INDICES = (2, 5, 11, 14)


def _no_decay():
    return paddle.ParamAttr(regularizer=paddle.regularizer.L2Decay(0.0))


class BackboneConvBN(nn.Layer):   # mobilenetv3.py's ConvBNLayer
    def __init__(self, channels_in, channels_out, kernel, stride=1, padding=0, groups=1, act=True):
        super().__init__()
        self.conv = nn.Conv2D(channels_in, channels_out, kernel, stride, padding, groups=groups, bias_attr=False)
        self.bn = nn.BatchNorm2D(channels_out, weight_attr=_no_decay(), bias_attr=_no_decay())
        self.act = act

    def forward(self, x):
        x = self.bn(self.conv(x))
        return F.hardswish(x) if self.act else x


class ResidualUnit(nn.Layer):
    def __init__(self, channels_in, mid, channels_out, kernel, stride, se):
        super().__init__()
        self.shortcut = stride == 1 and channels_in == channels_out
        self.expand_conv = BackboneConvBN(channels_in, mid, 1)
        self.bottleneck_conv = BackboneConvBN(mid, mid, kernel, stride, "same", groups=mid)
        self.se = SEModule(mid) if se else None
        self.linear_conv = BackboneConvBN(mid, channels_out, 1, act=False)

    def forward(self, inputs):
        x = self.bottleneck_conv(self.expand_conv(inputs))
        x = self.linear_conv(self.se(x) if self.se else x)
        return inputs + x if self.shortcut else x


class MobileNetV3Large(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv1 = BackboneConvBN(3, 16, 3, 2, 1)
        units, width = [], 16
        for kernel, mid, out, se, stride in LARGE:
            units.append(ResidualUnit(width, mid, out, kernel, stride, se))
            width = out
        self.units = nn.LayerList(units)

    def forward(self, x):
        feats, x = [], self.conv1(x)
        for i, unit in enumerate(self.units):
            x = unit(x)
            if i in OUT_INDICES:
                feats.append(x)
        return feats


class ConvBN(nn.Layer):
    """PaddleSeg's layers.ConvBN / ConvBNReLU: padding "same" unless given; a bias unless bias_attr=False."""

    def __init__(self, channels_in, channels_out, kernel, padding="same", groups=1, bias=True, relu=True):
        super().__init__()
        self.conv = nn.Conv2D(channels_in, channels_out, kernel, padding=padding, groups=groups,
                              bias_attr=None if bias else False)
        self.bn, self.relu = nn.BatchNorm2D(channels_out), relu

    def forward(self, x):
        x = self.bn(self.conv(x))
        return F.relu(x) if self.relu else x


class SeparableConvBNReLU(nn.Layer):   # called with bias_attr=False: the depthwise conv has none, the 1x1 one has
    def __init__(self, channels_in, channels_out, kernel, padding="same"):
        super().__init__()
        self.depthwise_conv = ConvBN(channels_in, channels_in, kernel, padding, channels_in, bias=False, relu=False)
        self.piontwise_conv = ConvBN(channels_in, channels_out, 1)

    def forward(self, x):
        return self.piontwise_conv(self.depthwise_conv(x))


class MobileContextModule(ContextModule):
    """PP-LiteSeg's context module (its forward) with MobileSeg's layers: biased 1x1 ConvBNReLUs, a separable out."""

    def __init__(self, channels_in, width, bins=(1, 2, 4)):
        nn.Layer.__init__(self)
        self.bins = bins
        self.stages = nn.LayerList([ConvBN(channels_in, width, 1) for _ in bins])
        self.conv_out = SeparableConvBNReLU(width, width, 3)


class UAFMMobile(nn.Layer):
    def __init__(self, low, high, width):
        super().__init__()
        self.conv_x, self.conv_out = SeparableConvBNReLU(low, high, 3, 1), SeparableConvBNReLU(high, width, 3, 1)

    def forward(self, x, y):
        x = self.conv_x(x)
        return self.conv_out(x + F.interpolate(y, x.shape[2:], mode="bilinear"))


class MobileSeg(nn.Layer):
    def __init__(self, arm=(32, 64, 128), heads=(16, 32, 32), context=128):
        super().__init__()
        self.backbone, features = MobileNetV3Large(), (24, 40, 112)
        self.cm = MobileContextModule(features[-1], context)
        highs = (*arm[1:], context)
        self.arm_list = nn.LayerList([UAFMMobile(features[i], highs[i], arm[i]) for i in range(3)])
        self.fuse_convs = nn.LayerList([SeparableConvBNReLU(a, arm[0], 3) for a in arm[1:]])
        self.last_conv = SeparableConvBNReLU(len(arm) * arm[0], arm[0], 3)
        self.seg_heads = nn.LayerList([nn.Sequential(SeparableConvBNReLU(a, m, 3),
                                                     nn.Conv2D(m, CLASSES, 1, bias_attr=False))
                                       for a, m in zip(arm, heads)])

    def forward(self, image, label):
        feats = self.backbone(image)[:3]
        high, fused = self.cm(feats[-1]), []
        for i in reversed(range(3)):
            high = self.arm_list[i](feats[i], high)
            fused.insert(0, high)
        finest = fused[0].shape[2:]
        coarse = [F.interpolate(conv(x), size=finest, mode="bilinear", align_corners=False)
                  for x, conv in zip(fused[1:], self.fuse_convs)]
        fused[0] = self.last_conv(paddle.concat([fused[0], *coarse], axis=1))
        logits = [F.interpolate(head(x), image.shape[2:], mode="bilinear", align_corners=False)
                  for head, x in zip(self.seg_heads, fused)]
        return paddle.add_n([0.8 * cross_entropy(logit, label) + 0.2 * lovasz_softmax(logit, label)
                             for logit in logits])


def cross_entropy(logit, label, eps: float = 1e-8):
    loss = F.cross_entropy(logit.transpose([0, 2, 3, 1]), label, ignore_index=IGNORE, reduction="none")
    mask = (label != IGNORE).astype(logit.dtype)
    mask.stop_gradient = True
    if loss.ndim > mask.ndim:
        loss = loss.squeeze(-1)
    return paddle.mean(loss * mask) / (paddle.mean(mask) + eps)


def _lovasz_grad(fg_sorted):
    total = fg_sorted.sum()
    intersection = total - paddle.cumsum(fg_sorted, axis=0)
    union = total + paddle.cumsum(1 - fg_sorted, axis=0)
    jaccard = 1.0 - intersection / union
    return paddle.concat([jaccard[:1], jaccard[1:] - jaccard[:-1]])


def lovasz_softmax(logit, label):
    probas = F.softmax(logit, axis=1).transpose([0, 2, 3, 1]).reshape([-1, CLASSES])
    flat = label.reshape([-1])
    valid = paddle.nonzero((flat != IGNORE).reshape([-1, 1]))[:, 0]
    probas, flat = paddle.gather(probas, valid), paddle.gather(flat, valid)
    losses = []
    for cls in range(CLASSES):   # 'present': the batch has both classes
        fg = (flat == cls).astype(probas.dtype)
        errors = paddle.abs(fg - probas[:, cls])
        errors_sorted = paddle.sort(errors, axis=0, descending=True)
        fg_sorted = paddle.gather(fg, paddle.argsort(errors, axis=0, descending=True))
        weight = _lovasz_grad(fg_sorted)
        weight.stop_gradient = True
        losses.append(paddle.sum(errors_sorted * weight))
    return paddle.mean(paddle.stack(losses))


def whole_feed(rng) -> dict:
    """A normalized image and a portrait mask: an ellipse of foreground (head and shoulders) over background."""
    rows, cols = np.mgrid[:HEIGHT, :WIDTH]
    label = np.zeros((BATCH, HEIGHT, WIDTH), "int64")
    for b in range(BATCH):
        centre_y, centre_x = rng.uniform(0.4, 0.6) * HEIGHT, rng.uniform(0.3, 0.7) * WIDTH
        radius_y, radius_x = rng.uniform(0.25, 0.45) * HEIGHT, rng.uniform(0.15, 0.3) * WIDTH
        label[b] = ((rows - centre_y) / radius_y) ** 2 + ((cols - centre_x) / radius_x) ** 2 < 1
    return {"image": rng.standard_normal((BATCH, 3, HEIGHT, WIDTH)).astype("float32"), "label": label}


def whole(values: dict):
    data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in values.items()}
    return MobileSeg()(**data)
