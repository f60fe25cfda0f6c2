"""PaddleOCR's PP-OCRv4 mobile text detector as it trains (configs/det/PP-OCRv4/PP-OCRv4_mobile_det.yml), rebuilt
with Paddle's layers from PaddleOCR's main branch: ppocr/modeling/backbones/rec_lcnetv3.py's PPLCNetV3 at scale 0.75
with `det: True` (NET_CONFIG_det: the stride-2 stem, LCNetV3Blocks whose LearnableRepLayers sum four kxk conv+BN
branches, a 1x1 one and an identity batch norm where shapes allow, the learnable affine blocks at a tenth of the
rate, squeeze-excitation in the first two of blocks6; the outputs of blocks3 to blocks6 each through a 1x1 conv to
0.75 x (16, 24, 56, 480) channels), necks/db_fpn.py's RSEFPN 96 wide with shortcuts (each lateral and output conv an
RSELayer: a bias-free conv plus its squeeze-excitation, hardsigmoid slope 0.2 offset 0.5; nearest upsampling, the
four levels concatenated), heads/det_db_head.py's DBHead with `fix_nan` (NaNs after each head batch norm replaced by
zeros in training) and k 50, and DBLoss (tools/paddleocr_db.py's head and loss, shared). The backbone's
LCNetV3Blocks are tools/paddleocr_ppocrv4_rec.py's; 64 x 64 images (16 x 16 to 2 x 2 levels), batch 2, with
tools/paddleocr_db.py's text maps. For tools/zoo_train_scheduled.py."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn
from paddleocr_db import DBFPN, SIZE, DBNet, _maps
from paddleocr_ppocrv4_rec import Block, ConvBN, divisible

SCALE, FPN = 0.75, 96
STAGES = (   # blocks2 to blocks6 of NET_CONFIG_det: kernel, in, out, stride, squeeze-excitation
    [(3, 16, 32, 1, False)], [(3, 32, 64, 2, False), (3, 64, 64, 1, False)],
    [(3, 64, 128, 2, False), (3, 128, 128, 1, False)],
    [(3, 128, 256, 2, False)] + [(5, 256, 256, 1, False)] * 4,
    [(5, 256, 512, 2, True), (5, 512, 512, 1, True), (5, 512, 512, 1, False), (5, 512, 512, 1, False)])
MOBILENET_WIDTHS = (16, 24, 56, 480)   # the 1x1 convs' widths (times the scale): MobileNetV3's, for the DB necks


class LCNetV3Det(nn.Layer):
    def __init__(self):
        super().__init__()
        self.stem = ConvBN(3, divisible(16 * SCALE), 3, 2)
        self.stages = nn.LayerList([nn.Sequential(*[Block(k, divisible(i * SCALE), divisible(o * SCALE), s, se)
                                                    for k, i, o, s, se in stage]) for stage in STAGES])
        self.layer_list = nn.LayerList([nn.Conv2D(divisible(stage[-1][2] * SCALE), int(width * SCALE), 1)
                                        for stage, width in zip(STAGES[1:], MOBILENET_WIDTHS)])
        self.widths = [int(width * SCALE) for width in MOBILENET_WIDTHS]

    def forward(self, x):
        outs, x = [], self.stem(x)
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i >= 1:   # blocks3 to blocks6
                outs.append(x)
        return [conv(out) for conv, out in zip(self.layer_list, outs)]


class SEModule(nn.Layer):   # db_fpn.py's: hardsigmoid with slope 0.2, offset 0.5
    def __init__(self, channels: int):
        super().__init__()
        kaiming = paddle.ParamAttr(initializer=nn.initializer.KaimingUniform())
        self.conv1 = nn.Conv2D(channels, channels // 4, 1, weight_attr=kaiming)
        self.conv2 = nn.Conv2D(channels // 4, channels, 1, weight_attr=kaiming)

    def forward(self, x):
        gate = self.conv2(F.relu(self.conv1(F.adaptive_avg_pool2d(x, 1))))
        return x * F.hardsigmoid(gate, slope=0.2, offset=0.5)


class RSELayer(nn.Layer):
    def __init__(self, channels_in: int, channels_out: int, kernel: int):
        super().__init__()
        kaiming = paddle.ParamAttr(initializer=nn.initializer.KaimingUniform())
        self.in_conv = nn.Conv2D(channels_in, channels_out, kernel, padding=kernel // 2, weight_attr=kaiming,
                                 bias_attr=False)
        self.se_block = SEModule(channels_out)

    def forward(self, x):
        x = self.in_conv(x)
        return x + self.se_block(x)   # shortcut: True


class RSEFPN(DBFPN):
    """DBFPN's top-down sums and upsampled concat over RSE layers (PaddleOCR's ins_conv and inp_conv)."""

    def __init__(self, widths_in, width: int = FPN):
        nn.Layer.__init__(self)
        self.ins = nn.LayerList([RSELayer(w, width, 1) for w in widths_in])
        self.outs = nn.LayerList([RSELayer(width, width // 4, 3) for _ in widths_in])


class Detector(nn.Layer):
    def __init__(self):
        super().__init__()
        self.backbone = LCNetV3Det()
        self.net = DBNet(width=FPN, neck=RSEFPN(self.backbone.widths), fix_nan=True)

    def forward(self, image, **maps):
        return self.net(*self.backbone(image), **maps)


def whole_feed(rng, batch: int = 2) -> dict:
    """An image normalized as the config's NormalizeImage leaves it, and tools/paddleocr_db.py's text maps."""
    return {"image": rng.standard_normal((batch, 3, SIZE, SIZE)).astype(np.float32), **_maps(rng, batch)}


def whole(values: dict):
    data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in values.items()}
    return Detector()(**data)
