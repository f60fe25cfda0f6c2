"""PP-YOLOE "s" whole, from the image to the loss (configs/ppyoloe/ppyoloe_crn_s_300e_coco.yml: width_mult 0.5,
depth_mult 0.33): CSPResNet (backbones/cspresnet.py: the large stem of three 3x3 ConvBN-swish, four CSPResStages of
a stride-2 ConvBN, two 1x1 halves, BasicBlocks of a 3x3 ConvBN and a RepVggBlock (3x3 and 1x1 ConvBN summed) with a
shortcut, the effective squeeze-excitation (mean, 1x1 conv, hardsigmoid), a 1x1 ConvBN; channels 32 to 512, one
block a stage, stages 2 to 4 returned) and CustomCSPPAN (necks/custom_pan.py: top-down CSPStages with the SPP of
5, 9 and 13 max pools in the first, 1x1 routes and nearest 2x upsampling, bottom-up stride-2 3x3 routes; swish, out
channels 384, 192, 96), then tools/paddledet_ppyoloe.py's head, assigner and losses on the neck's three levels.
Batch norms as PaddleDetection's ConvBNLayer makes them (BatchNorm2D; their scale and offset carry L2Decay(0.0),
which the training tool passes as gradc's param_attrs). For tools/zoo_train_scheduled.py."""

from __future__ import annotations

import paddle
import paddle.nn.functional as F
from paddle import nn
from paddledet_ppyoloe import SIZE, PPYOLOEHead, detector_feed, static_inputs

CHANNELS, LAYERS, NECK = (32, 64, 128, 256, 512), (1, 2, 2, 1), (384, 192, 96)   # "s": x0.5 widths, x0.33 depths


class ConvBN(nn.Layer):
    def __init__(self, channels_in: int, channels_out: int, kernel: int = 1, stride: int = 1, act: bool = True):
        super().__init__()
        self.conv = nn.Conv2D(channels_in, channels_out, kernel, stride, kernel // 2, bias_attr=False)
        no_decay = paddle.ParamAttr(regularizer=paddle.regularizer.L2Decay(0.0))
        self.bn, self.act = nn.BatchNorm2D(channels_out, weight_attr=no_decay, bias_attr=no_decay), act

    def forward(self, x):
        x = self.bn(self.conv(x))
        return F.swish(x) if self.act else x


class BasicBlock(nn.Layer):   # a 3x3 ConvBN, then the RepVggBlock in its training form
    def __init__(self, width: int, shortcut: bool):
        super().__init__()
        self.conv1, self.shortcut = ConvBN(width, width, 3), shortcut
        self.rep3, self.rep1 = ConvBN(width, width, 3, act=False), ConvBN(width, width, 1, act=False)

    def forward(self, x):
        y = self.conv1(x)
        y = F.swish(self.rep3(y) + self.rep1(y))
        return x + y if self.shortcut else y


class CSPResStage(nn.Layer):
    def __init__(self, channels_in: int, channels_out: int, blocks: int):
        super().__init__()
        mid = (channels_in + channels_out) // 2
        self.down = ConvBN(channels_in, mid, 3, 2)
        self.conv1, self.conv2 = ConvBN(mid, mid // 2), ConvBN(mid, mid // 2)
        self.blocks = nn.Sequential(*[BasicBlock(mid // 2, True) for _ in range(blocks)])
        self.attention = nn.Conv2D(mid, mid, 1)   # EffectiveSELayer's fc
        self.conv3 = ConvBN(mid, channels_out)

    def forward(self, x):
        x = self.down(x)
        y = paddle.concat([self.conv1(x), self.blocks(self.conv2(x))], axis=1)
        y = y * F.hardsigmoid(self.attention(y.mean((2, 3), keepdim=True)))
        return self.conv3(y)


class CSPResNet(nn.Layer):
    def __init__(self):
        super().__init__()
        half = CHANNELS[0] // 2
        self.stem = nn.Sequential(ConvBN(3, half, 3, 2), ConvBN(half, half, 3), ConvBN(half, CHANNELS[0], 3))
        self.stages = nn.LayerList([CSPResStage(CHANNELS[i], CHANNELS[i + 1], LAYERS[i]) for i in range(4)])

    def forward(self, x):
        outs, x = [], self.stem(x)
        for stage in self.stages:
            x = stage(x)
            outs.append(x)
        return outs[1:]


class SPP(nn.Layer):
    def __init__(self, channels_in: int, channels_out: int):
        super().__init__()
        self.conv = ConvBN(channels_in, channels_out)

    def forward(self, x):
        pooled = [F.max_pool2d(x, size, 1, size // 2) for size in (5, 9, 13)]
        return self.conv(paddle.concat([x, *pooled], axis=1))


class CSPStage(nn.Layer):   # block_num 3 x 0.33: one BasicBlock without shortcut, the SPP after it where asked
    def __init__(self, channels_in: int, channels_out: int, spp: bool):
        super().__init__()
        mid = channels_out // 2
        self.conv1, self.conv2 = ConvBN(channels_in, mid), ConvBN(channels_in, mid)
        self.convs = nn.Sequential(BasicBlock(mid, False), *([SPP(mid * 4, mid)] if spp else []))
        self.conv3 = ConvBN(mid * 2, channels_out)

    def forward(self, x):
        return self.conv3(paddle.concat([self.conv1(x), self.convs(self.conv2(x))], axis=1))


class CustomCSPPAN(nn.Layer):
    def __init__(self, widths_in=CHANNELS[2:]):
        super().__init__()
        fpn, routes, previous = [], [], 0
        for i, (width_in, width_out) in enumerate(zip(widths_in[::-1], NECK)):
            fpn.append(CSPStage(width_in + previous // 2, width_out, spp=i == 0))
            if i < len(NECK) - 1:
                routes.append(ConvBN(width_out, width_out // 2))
            previous = width_out
        self.fpn_stages, self.fpn_routes = nn.LayerList(fpn), nn.LayerList(routes)
        self.pan_routes = nn.LayerList([ConvBN(NECK[i + 1], NECK[i + 1], 3, 2) for i in range(len(NECK) - 1)])
        self.pan_stages = nn.LayerList([CSPStage(NECK[i] + NECK[i + 1], NECK[i], False) for i in range(len(NECK) - 1)])

    def forward(self, blocks):
        fpn_feats, route = [], None
        for i, block in enumerate(blocks[::-1]):
            if route is not None:
                block = paddle.concat([route, block], axis=1)
            route = self.fpn_stages[i](block)
            fpn_feats.append(route)
            if i < len(blocks) - 1:
                route = F.interpolate(self.fpn_routes[i](route), scale_factor=2.0)
        pan_feats, route = [fpn_feats[-1]], fpn_feats[-1]
        for i in reversed(range(len(blocks) - 1)):
            route = self.pan_stages[i](paddle.concat([self.pan_routes[i](route), fpn_feats[i]], axis=1))
            pan_feats.append(route)
        return pan_feats[::-1]


class PPYOLOE(nn.Layer):
    def __init__(self):
        super().__init__()
        self.backbone, self.neck, self.head = CSPResNet(), CustomCSPPAN(), PPYOLOEHead(NECK)

    def forward(self, image, gt_class, gt_bbox, pad_gt_mask):
        return self.head(self.neck(self.backbone(image)), gt_class, gt_bbox, pad_gt_mask)


def whole_feed(rng, batch: int = 2) -> dict:
    return detector_feed(rng, batch, SIZE)


def whole(values: dict):
    return PPYOLOE()(**static_inputs(values))
