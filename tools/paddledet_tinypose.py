"""PP-TinyPose whole, from the image to the loss (PaddleDetection's configs/keypoint/tiny_pose/tinypose_128x96.yml):
TopDownHRNet over LiteHRNet "wider_naive" (ppdet/modeling/backbones/lite_hrnet.py, architectures/keypoint_hrnet.py,
losses/keypoint_loss.py), rebuilt with Paddle's layers:
- the Stem (a stride-2 3x3 ConvNormLayer to 32, split in halves: a depthwise stride-2 conv and a 1x1 one on the
  first, a 1x1 expand, a depthwise stride-2 conv and a linear 1x1 on the second; concatenated, channel_shuffle of
  2 groups); ConvNormLayers are conv + batch norm (L2Decay(0.0), the config's norm_decay) + relu where given;
- three stages of NAIVE LiteHRNetModules (2, 4 and 2 modules over 2, 3 and 4 branches 40, 80, 160 and 320 wide),
  each branch two stride-1 ShuffleUnits (half the channels through 1x1 relu, depthwise 3x3, 1x1 relu, concatenated
  with the other half, shuffled), then the fuse layers of every output (multiscale_output): coarser branches by a
  1x1 conv, batch norm and nearest upsampling, finer ones by depthwise stride-2 convs with batch norms (relu between
  them), summed and relu'd. Its forward sums branch 0 twice (y starts as out[0] and adds out[0] again) and writes
  the running sum of output 0 back to out[0], so the later outputs fuse that sum: reproduced as written. The
  transitions between stages add a branch by a depthwise stride-2 conv and a 1x1 conv with batch norms and relu;
- the IterativeHead (from the coarsest branch: add the previous output upsampled bilinearly with align_corners,
  then a depthwise-separable ConvNormLayer pair), whose finest output (return_idx [0]) goes through TopDownHRNet's
  final 1x1 conv to 17 heatmaps;
- KeyPointMSELoss with use_target_weight (loss_scale 1.0): per joint the mean squared error of the heatmaps, both
  multiplied by the joint's target weight, summed over joints and divided by their count.
A 64 x 64 input and 16 x 16 heatmaps (stride 4; branches 16, 8, 4 and 2 cells a side), batch 2: the config's
128 x 96 (TINYPOSE_FULL=1) takes 4 s a step in gradc's numpy executor, and a width that is no multiple of 32 (64 x 48)
does not build (its 3-cell branch rounds up to 2, which the fuse layers' upsampling by 8 takes to 16, not 12).
Targets are Gaussians of sigma 1 (ToHeatmapsTopDown_DARK's) at random joints, some of them weighted 0 (invisible).
TopDownHRNet's final conv is ppdet's layers.Conv2d, whose bias Paddle draws; here an nn.Conv2D's (a constant 0,
kept). For tools/zoo_train_scheduled.py."""

from __future__ import annotations

import os

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

FULL = os.environ.get("TINYPOSE_FULL") == "1"   # the config's 128 x 96 input; the fixture's is 64 x 64
JOINTS, HEIGHT, WIDTH, BATCH, STRIDE, SIGMA = 17, 128 if FULL else 64, 96 if FULL else 64, 2, 4, 1.0
STAGES = ((2, (40, 80)), (4, (40, 80, 160)), (2, (40, 80, 160, 320)))   # wider_naive: modules, channels
BLOCKS = 2


def channel_shuffle(x, groups: int = 2):
    batch, channels, height, width = x.shape
    x = x.reshape([batch, groups, channels // groups, height, width]).transpose([0, 2, 1, 3, 4])
    return x.reshape([batch, channels, height, width])


class ConvNorm(nn.Layer):   # ConvNormLayer with norm_type bn, norm_decay 0
    def __init__(self, channels_in, channels_out, kernel, stride=1, groups=1, relu=False):
        super().__init__()
        self.conv = nn.Conv2D(channels_in, channels_out, kernel, stride, (kernel - 1) // 2, groups=groups,
                              bias_attr=False)
        decay = paddle.regularizer.L2Decay(0.0)
        self.norm = nn.BatchNorm2D(channels_out, weight_attr=paddle.ParamAttr(regularizer=decay),
                                   bias_attr=paddle.ParamAttr(regularizer=decay))
        self.relu = relu

    def forward(self, x):
        x = self.norm(self.conv(x))
        return F.relu(x) if self.relu else x


def plain(channels_in, channels_out, kernel=1, stride=1, groups=1, relu=False):
    """The transitions' and fuse layers' nn.Conv2D + nn.BatchNorm (no regularizer of their own)."""
    layers = [nn.Conv2D(channels_in, channels_out, kernel, stride, (kernel - 1) // 2, groups=groups, bias_attr=False),
              nn.BatchNorm2D(channels_out)]
    return layers + [nn.ReLU()] if relu else layers


def downsample(channels_in, channels_out, relu):
    return plain(channels_in, channels_in, 3, 2, channels_in) + plain(channels_in, channels_out, relu=relu)


class Stem(nn.Layer):   # Stem(3, 32, 32, expand_ratio 1)
    def __init__(self, width: int = 32):
        super().__init__()
        half = width // 2
        self.conv1 = ConvNorm(3, width, 3, 2, relu=True)
        self.branch1 = nn.Sequential(ConvNorm(half, half, 3, 2, half), ConvNorm(half, width - half, 1, relu=True))
        self.expand_conv = ConvNorm(half, width, 1, relu=True)
        self.depthwise_conv = ConvNorm(width, width, 3, 2, width)
        self.linear_conv = ConvNorm(width, half, 1, relu=True)

    def forward(self, x):
        x1, x2 = self.conv1(x).chunk(2, axis=1)
        x2 = self.linear_conv(self.depthwise_conv(self.expand_conv(x2)))
        return channel_shuffle(paddle.concat([self.branch1(x1), x2], axis=1))


class ShuffleUnit(nn.Layer):   # stride 1
    def __init__(self, channels: int):
        super().__init__()
        half = channels // 2
        self.branch2 = nn.Sequential(ConvNorm(half, half, 1, relu=True), ConvNorm(half, half, 3, groups=half),
                                     ConvNorm(half, half, 1, relu=True))

    def forward(self, x):
        x1, x2 = x.chunk(2, axis=1)
        return channel_shuffle(paddle.concat([x1, self.branch2(x2)], axis=1))


class NaiveModule(nn.Layer):
    def __init__(self, channels):
        super().__init__()
        self.layers = nn.LayerList([nn.Sequential(*[ShuffleUnit(c) for _ in range(BLOCKS)]) for c in channels])
        self.fuse_layers = nn.LayerList([nn.LayerList([self._fuse(channels, i, j) for j in range(len(channels))])
                                         for i in range(len(channels))])

    @staticmethod
    def _fuse(channels, i, j):
        if j > i:
            return nn.Sequential(*plain(channels[j], channels[i]), nn.Upsample(scale_factor=2 ** (j - i),
                                                                                mode="nearest"))
        if j == i:
            return None
        steps = [downsample(channels[j], channels[j], True) for _ in range(i - j - 1)]
        return nn.Sequential(*[layer for step in steps for layer in step],
                             *downsample(channels[j], channels[i], False))

    def forward(self, x):
        out = [branch(s) for branch, s in zip(self.layers, x)]
        fused = []
        for i, layers in enumerate(self.fuse_layers):
            y = out[0] if i == 0 else layers[0](out[0])
            for j in range(len(out)):
                y = y + (out[j] if i == j else layers[j](out[j]))
                if i == 0:
                    out[i] = y
            fused.append(F.relu(y))
        return fused


class LiteHRNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.stem = Stem()
        previous, transitions, stages = [32], [], []
        for modules, channels in STAGES:
            transitions.append(nn.LayerList([self._transition(previous, channels, i) for i in range(len(channels))]))
            stages.append(nn.Sequential(*[NaiveModule(channels) for _ in range(modules)]))
            previous = channels
        self.transitions, self.stages = nn.LayerList(transitions), nn.LayerList(stages)
        reversed_channels = previous[::-1]
        self.projects = nn.LayerList([   # IterativeHead: depthwise 3x3 + batch norm, 1x1 + batch norm + relu
            nn.Sequential(ConvNorm(c, c, 3, groups=c),
                          ConvNorm(c, reversed_channels[min(i + 1, len(previous) - 1)], 1, relu=True))
            for i, c in enumerate(reversed_channels)])

    @staticmethod
    def _transition(previous, channels, i):
        if i < len(previous):
            if channels[i] == previous[i]:
                return None
            return nn.Sequential(*plain(previous[i], previous[i], 3, groups=previous[i]),
                                 *plain(previous[i], channels[i], relu=True))
        last = previous[-1]
        steps = [downsample(last, channels[i] if j == i - len(previous) else last, True)
                 for j in range(i + 1 - len(previous))]
        return nn.Sequential(*[layer for step in steps for layer in step])

    def forward(self, image):
        branches = [self.stem(image)]
        for transition, stage in zip(self.transitions, self.stages):
            inputs = [branches[min(j, len(branches) - 1)] for j in range(len(transition))]   # a new branch: the last
            branches = stage([s if layer is None else layer(s) for s, layer in zip(inputs, transition)])
        previous, outputs = None, []
        for s, project in zip(branches[::-1], self.projects):
            if previous is not None:
                s = s + F.interpolate(previous, size=s.shape[-2:], mode="bilinear", align_corners=True)
            previous = project(s)
            outputs.append(previous)
        return outputs[-1]   # the finest: return_idx [0]


class TinyPose(nn.Layer):
    def __init__(self, width: int = 40):
        super().__init__()
        self.backbone, self.final_conv = LiteHRNet(), nn.Conv2D(width, JOINTS, 1)

    def forward(self, image, target, target_weight):
        heatmaps = self.final_conv(self.backbone(image))
        predicted = heatmaps.reshape([BATCH, JOINTS, -1]).split(JOINTS, 1)
        truth = target.reshape([BATCH, JOINTS, -1]).split(JOINTS, 1)
        loss = 0
        for joint in range(JOINTS):
            weight = target_weight[:, joint]
            loss += 1.0 * F.mse_loss(predicted[joint].squeeze().multiply(weight),
                                     truth[joint].squeeze().multiply(weight))
        return loss / JOINTS


def whole_feed(rng) -> dict:
    """A normalized image, Gaussian heatmaps (sigma 1) at random joints and their weights (a few invisible: 0)."""
    rows, cols = np.mgrid[:HEIGHT // STRIDE, :WIDTH // STRIDE]
    centres = rng.uniform(2, (WIDTH // STRIDE - 2, HEIGHT // STRIDE - 2), (BATCH, JOINTS, 2))
    target = np.exp(-((cols - centres[..., :1, None]) ** 2 + (rows - centres[..., 1:, None]) ** 2) / (2 * SIGMA ** 2))
    weight = (rng.random((BATCH, JOINTS, 1)) > 0.2).astype("float32")
    return {"image": rng.standard_normal((BATCH, 3, HEIGHT, WIDTH)).astype("float32"),
            "target": (target * weight[..., None]).astype("float32"), "target_weight": weight}


def whole(values: dict):
    data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in values.items()}
    return TinyPose()(**data)
