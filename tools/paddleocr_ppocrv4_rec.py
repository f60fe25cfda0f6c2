"""PaddleOCR's PP-OCRv4 recognizer as it trains (configs/rec/PP-OCRv4/en_PP-OCRv4_rec.yml), rebuilt with Paddle's
layers from PaddleOCR's main branch: ppocr/modeling/backbones/rec_lcnetv3.py (PPLCNetV3: a stride-2
stem, fourteen LCNetV3Blocks whose depthwise and pointwise LearnableRepLayers sum four kxk conv+BN branches, a 1x1
one and an identity batch norm where shapes allow, each scaled by a LearnableAffineBlock (its scale and bias train
at a tenth of the rate) and a hardswish; squeeze-excitation in the first two of the last stage; the training
form's adaptive average pool to 1 x 40), ppocr/modeling/heads/rec_multi_head.py's MultiHead with its two heads:
the CTC branch (necks/rnn.py's EncoderWithSVTR, dims 120, depth 2, kernel [1, 3], use_guide: its input detached,
so the backbone learns through the NRTR branch only; two global-attention SVTR blocks of rec_svtrnet.py with Swish;
CTCHead's fc with its own L2Decay(1e-5)) and the NRTR branch (a bias-free fc to nrtr_dim 384, then
rec_nrtr_head.py's Transformer decoder, no encoder: TransformerBlocks of self-attention under the causal mask,
cross-attention to the 40 image columns, a ReLU MLP 4 x as wide, post-norm; embeddings scaled by sqrt(nrtr_dim), the
sinusoidal positions) and MultiLoss: CTCLoss (warpctc, reduction none, the batch mean) plus NRTRLoss (label
smoothing 0.1, padding ignored). en_dict.txt's 95 characters and the space: 97 CTC classes, NRTR's 100 (+1).

Shrunk and static: backbone scale 0.5 and NRTR 128 wide (4 heads), 2 decoder layers, 16 x 160 images at batch 1
(PPOCRV4_FULL=1: the config's 0.95, 384 and 4 at 32 x 160, batch 2; its 48 x 320 gives the same 40 columns);
dropout 0 (the config's 0.1 in the SVTR neck and NRTR decoder); the NRTR targets cut to the batch's longest label
+ 2 before the program (Transformer.forward slices by `length.max()`, a tensor, and then sizes its positions and
causal mask by the result's static dims, which a static program does not know). For tools/zoo_train_scheduled.py."""

from __future__ import annotations

import math
import os

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn
from paddleocr_ppocrv4_heads import NRTR, Mlp, ctc_loss, linear, nrtr_loss

WIDTH, CTC_CLASSES, NRTR_CLASSES, TEXT = 160, 97, 100, 25
# the config's backbone scale 0.95 and NRTR 384 wide, 4 layers (15M parameters, a 20-second step in gradc), at
# 32 x 160 and batch 2, with PPOCRV4_FULL=1; the fixture's shrunk
FULL = bool(os.environ.get("PPOCRV4_FULL"))
SCALE, NRTR_DIM, NRTR_LAYERS, HEIGHT, BATCH = (0.95, 384, 4, 32, 2) if FULL else (0.5, 128, 2, 16, 1)
NO_DECAY = paddle.regularizer.L2Decay(0.0)

# blocks2 to blocks6 of NET_CONFIG_rec: kernel, in, out, stride, squeeze-excitation
STAGES = ([(3, 16, 32, 1, False)],
          [(3, 32, 64, 1, False), (3, 64, 64, 1, False)],
          [(3, 64, 128, (2, 1), False), (3, 128, 128, 1, False)],
          [(3, 128, 256, (1, 2), False)] + [(5, 256, 256, 1, False)] * 4,
          [(5, 256, 512, (2, 1), True), (5, 512, 512, 1, True), (5, 512, 512, (2, 1), False),
           (5, 512, 512, 1, False)])


def divisible(value: float, divisor: int = 16) -> int:   # rec_lcnetv3's make_divisible
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


class Affine(nn.Layer):   # LearnableAffineBlock: scale 1 and bias 0, at lr_mult * lab_lr = 0.1 of the rate
    def __init__(self):
        super().__init__()
        attr = {"learning_rate": 0.1}
        self.scale = self.create_parameter([1], attr=paddle.ParamAttr(**attr),
                                           default_initializer=nn.initializer.Constant(1.0))
        self.bias = self.create_parameter([1], attr=paddle.ParamAttr(**attr),
                                          default_initializer=nn.initializer.Constant(0.0))

    def forward(self, x):
        return self.scale * x + self.bias


class ConvBN(nn.Layer):   # rec_lcnetv3's ConvBNLayer: Kaiming-normal conv without bias, batch norm without decay
    def __init__(self, channels_in, channels_out, kernel, stride, groups=1):
        super().__init__()
        self.conv = nn.Conv2D(channels_in, channels_out, kernel, stride, (kernel - 1) // 2, groups=groups,
                              weight_attr=paddle.ParamAttr(initializer=nn.initializer.KaimingNormal()),
                              bias_attr=False)
        self.bn = nn.BatchNorm2D(channels_out, weight_attr=paddle.ParamAttr(regularizer=NO_DECAY),
                                 bias_attr=paddle.ParamAttr(regularizer=NO_DECAY))

    def forward(self, x):
        return self.bn(self.conv(x))


class RepLayer(nn.Layer):   # LearnableRepLayer in its training (not re-parameterized) form
    def __init__(self, channels_in, channels_out, kernel, stride=1, groups=1, branches=4):
        super().__init__()
        self.stride = stride
        self.identity = (nn.BatchNorm2D(channels_in) if channels_in == channels_out and stride == 1 else None)
        self.kxk = nn.LayerList([ConvBN(channels_in, channels_out, kernel, stride, groups) for _ in range(branches)])
        self.one = ConvBN(channels_in, channels_out, 1, stride, groups) if kernel > 1 else None
        self.lab, self.act_lab = Affine(), Affine()

    def forward(self, x):
        out = 0
        if self.identity is not None:
            out += self.identity(x)
        if self.one is not None:
            out += self.one(x)
        for conv in self.kxk:
            out += conv(x)
        out = self.lab(out)
        return out if self.stride == 2 else self.act_lab(F.hardswish(out))


class SqueezeExcite(nn.Layer):
    def __init__(self, channels):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2D(channels, channels // 4, 1), nn.Conv2D(channels // 4, channels, 1)

    def forward(self, x):
        return x * F.hardsigmoid(self.conv2(F.relu(self.conv1(F.adaptive_avg_pool2d(x, 1)))))


class Block(nn.Layer):   # LCNetV3Block
    def __init__(self, kernel, channels_in, channels_out, stride, se):
        super().__init__()
        self.dw = RepLayer(channels_in, channels_in, kernel, stride, groups=channels_in)
        self.se = SqueezeExcite(channels_in) if se else None
        self.pw = RepLayer(channels_in, channels_out, 1)

    def forward(self, x):
        x = self.dw(x)
        return self.pw(self.se(x) if self.se is not None else x)


class LCNetV3(nn.Layer):
    def __init__(self):
        super().__init__()
        self.stem = ConvBN(3, divisible(16 * SCALE), 3, 2)
        self.blocks = nn.Sequential(*[Block(k, divisible(i * SCALE), divisible(o * SCALE), s, se)
                                      for stage in STAGES for k, i, o, s, se in stage])
        self.width = divisible(512 * SCALE)

    def forward(self, x):
        return F.adaptive_avg_pool2d(self.blocks(self.stem(x)), [1, 40])


class SvtrConvBN(nn.Layer):   # rec_svtrnet's ConvBNLayer with the neck's Swish
    def __init__(self, channels_in, channels_out, kernel):
        super().__init__()
        padding = [k // 2 for k in kernel]
        self.conv = nn.Conv2D(channels_in, channels_out, kernel, padding=padding, bias_attr=False,
                              weight_attr=paddle.ParamAttr(initializer=nn.initializer.KaimingUniform()))
        self.norm = nn.BatchNorm2D(channels_out)

    def forward(self, x):
        return F.swish(self.norm(self.conv(x)))


class Attention(nn.Layer):   # rec_svtrnet's global Attention, qkv_bias True
    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads, self.dim, self.scale = heads, dim, (dim // heads) ** -0.5
        self.qkv, self.proj = linear(dim, dim * 3), linear(dim, dim)

    def forward(self, x):
        qkv = self.qkv(x).reshape([0, -1, 3, self.heads, self.dim // self.heads]).transpose([2, 0, 3, 1, 4])
        q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
        attention = F.softmax(q.matmul(k.transpose([0, 1, 3, 2])), axis=-1)
        return self.proj(attention.matmul(v).transpose([0, 2, 1, 3]).reshape([0, -1, self.dim]))


class SvtrBlock(nn.Layer):   # rec_svtrnet's Block, post-residual (prenorm False), LayerNorm epsilon 1e-5
    def __init__(self, dim):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim, epsilon=1e-5), nn.LayerNorm(dim, epsilon=1e-5)
        self.mixer, self.mlp = Attention(dim), Mlp(dim, dim * 2, F.swish)

    def forward(self, x):
        x = x + self.mixer(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class EncoderWithSVTR(nn.Layer):
    def __init__(self, channels, dims=120, depth=2, hidden=120, kernel=(1, 3)):
        super().__init__()
        self.conv1 = SvtrConvBN(channels, channels // 8, kernel)
        self.conv2 = SvtrConvBN(channels // 8, hidden, (1, 1))
        self.blocks = nn.LayerList([SvtrBlock(hidden) for _ in range(depth)])
        self.norm = nn.LayerNorm(hidden, epsilon=1e-6)
        self.conv3 = SvtrConvBN(hidden, channels, (1, 1))
        self.conv4 = SvtrConvBN(2 * channels, channels // 8, kernel)
        self.conv1x1 = SvtrConvBN(channels // 8, dims, (1, 1))

    def forward(self, x):
        z = x.detach()   # use_guide: x.clone() with stop_gradient
        h = z
        z = self.conv2(self.conv1(z))
        _, channels, height, width = z.shape
        z = z.flatten(2).transpose([0, 2, 1])
        for block in self.blocks:
            z = block(z)
        z = self.norm(z).reshape([0, height, width, channels]).transpose([0, 3, 1, 2])
        z = paddle.concat((h, self.conv3(z)), axis=1)
        return self.conv1x1(self.conv4(z)).squeeze(axis=2).transpose([0, 2, 1])   # then Im2Seq


class Recognizer(nn.Layer):
    def __init__(self):
        super().__init__()
        self.backbone = LCNetV3()
        width = self.backbone.width
        self.ctc_encoder = EncoderWithSVTR(width)
        bound = 1.0 / math.sqrt(120)
        head_attr = paddle.ParamAttr(regularizer=paddle.regularizer.L2Decay(1e-5),
                                     initializer=nn.initializer.Uniform(-bound, bound))
        self.ctc_head = nn.Linear(120, CTC_CLASSES, weight_attr=head_attr, bias_attr=head_attr)
        self.nrtr = NRTR(width, NRTR_DIM, NRTR_LAYERS, NRTR_CLASSES)

    def forward(self, image, label_ctc, label_gtc, length):
        features = self.backbone(image)
        ctc = self.ctc_head(self.ctc_encoder(features))
        return ctc_loss(ctc, label_ctc, length) + nrtr_loss(self.nrtr(features, label_gtc), label_gtc)


def whole_feed(rng, batch: int = BATCH) -> dict:
    """A normalized image; each label's CTC indices (1 to 96, padded with 0 to 25), its NRTR form (<s> 2, the
    characters 4 on, </s> 3, padded with 0) cut to the longest label + 2, and the lengths."""
    lengths = rng.integers(5, 11, batch)
    label_ctc, label_gtc = np.zeros((batch, TEXT), "int64"), np.zeros((batch, lengths.max() + 2), "int64")
    for b, count in enumerate(lengths):
        characters = rng.integers(1, CTC_CLASSES, count)
        label_ctc[b, :count] = characters
        label_gtc[b, :count + 2] = [2, *(characters + 3), 3]
    return {"image": rng.standard_normal((batch, 3, HEIGHT, WIDTH)).astype("float32"), "label_ctc": label_ctc,
            "label_gtc": label_gtc, "length": lengths.astype("int64")}


def whole(values: dict):
    data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in values.items()}
    return Recognizer()(**data)
