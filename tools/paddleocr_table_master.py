"""PaddleOCR's TableMaster as it trains (configs/table/table_master.yml): the TableResNetExtra backbone with its
multi-aspect global-context blocks, the TableMasterHead decoder run teacher-forced on the structure tokens
(forward_train: two shared decoder layers, then one for the structure classes and one for the boxes), and
TableMasterLoss (cross entropy over the structure tokens, PAD ignored, plus masked L1 losses of the boxes' x/width
and y/height). Rebuilt with Paddle's layers from PaddleOCR's ppocr/modeling/backbones/table_master_resnet.py,
ppocr/modeling/heads/table_master_head.py and ppocr/losses/table_master_loss.py (read at its main branch); every
channel count is the config's divided by ``shrink`` (a fixture's size). For tools/paddleocr_train_static.py."""

from __future__ import annotations

import math

import paddle
import paddle.nn.functional as F
from paddle import nn

VOCAB = 43   # the structure dictionary's tokens and its specials: SOS = VOCAB - 3, EOS = VOCAB - 2, PAD = VOCAB - 1


class ContextBlock(nn.Layer):
    """MultiAspectGCAttention as the config has it: attention pooling (one header), channel_add fusion."""

    def __init__(self, channels: int, ratio: float):
        super().__init__()
        hidden = int(channels * ratio)
        self.conv_mask = nn.Conv2D(channels, 1, kernel_size=1)
        self.channel_add_conv = nn.Sequential(nn.Conv2D(channels, hidden, kernel_size=1),
                                              nn.LayerNorm([hidden, 1, 1]), nn.ReLU(),
                                              nn.Conv2D(hidden, channels, kernel_size=1))

    def forward(self, x):
        batch, channels, height, width = x.shape
        flat = x.reshape([batch, channels, height * width]).unsqueeze(1)
        weights = F.softmax(self.conv_mask(x).reshape([batch, 1, height * width]), axis=2).unsqueeze(-1)
        context = paddle.matmul(flat, weights).reshape([batch, channels, 1, 1])
        return x + self.channel_add_conv(context)


class BasicBlock(nn.Layer):
    def __init__(self, inplanes: int, planes: int, ratio: float | None):
        super().__init__()
        self.conv1 = nn.Conv2D(inplanes, planes, 3, padding=1, bias_attr=False)
        self.bn1 = nn.BatchNorm2D(planes, momentum=0.9)
        self.conv2 = nn.Conv2D(planes, planes, 3, padding=1, bias_attr=False)
        self.bn2 = nn.BatchNorm2D(planes, momentum=0.9)
        self.context = ContextBlock(planes, ratio) if ratio else None
        self.downsample = None if inplanes == planes else nn.Sequential(
            nn.Conv2D(inplanes, planes, 1, bias_attr=False), nn.BatchNorm2D(planes))

    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        if self.context is not None:
            out = self.context(out)
        return F.relu(out + (x if self.downsample is None else self.downsample(x)))


def _conv_bn_relu(inplanes: int, planes: int):
    return nn.Sequential(nn.Conv2D(inplanes, planes, 3, padding=1, bias_attr=False), nn.BatchNorm2D(planes),
                         nn.ReLU())


class Backbone(nn.Layer):
    """TableResNetExtra, layers [1, 2, 5, 3], context blocks in the first block of stages 2 to 4."""

    def __init__(self, shrink: int, layers=(1, 2, 5, 3)):
        super().__init__()
        c64, c128, c256, c512 = (c // shrink for c in (64, 128, 256, 512))
        ratio = max(0.0625, 1 / c256)   # the config's; at a fixture's width, so that a context block keeps a channel
        self.stem = nn.Sequential(_conv_bn_relu(3, c64), _conv_bn_relu(c64, c128), nn.MaxPool2D(2, 2))
        stages, inplanes = [], c128
        for index, (planes, count) in enumerate(zip((c256, c256, c512, c512), layers)):
            blocks = [BasicBlock(inplanes, planes, ratio if index > 0 else None)]
            blocks += [BasicBlock(planes, planes, None) for _ in range(1, count)]
            inplanes = planes
            stages.append(nn.Sequential(*blocks, _conv_bn_relu(planes, planes)))
        self.stages = nn.LayerList(stages)

    def forward(self, x):
        x = self.stem(x)
        for index, stage in enumerate(self.stages):
            x = stage(x)
            if index < 2:   # maxpool2 and maxpool3 follow the first two stages
                x = F.max_pool2d(x, 2, 2)
        return x


def positional_table(d_model: int, max_len: int = 5000):
    """The sinusoidal table, its even and odd columns set as the head's PositionalEncoding sets them (its
    ``pe[:, 0::2] = ...`` is paddle.static.setitem in static mode: set_value ops)."""
    table = paddle.zeros([max_len, d_model])
    dtype = paddle.get_default_dtype()   # float32 in PaddleOCR; a float64 build's table is float64 throughout
    position = paddle.arange(0, max_len).unsqueeze(1).astype(dtype)
    columns = paddle.arange(0, d_model, 2)
    rates = paddle.exp((columns if dtype == "float32" else columns.astype(dtype)) * -math.log(10000.0) / d_model)
    table = paddle.static.setitem(table, (slice(None), slice(0, None, 2)), paddle.sin(position * rates))
    table = paddle.static.setitem(table, (slice(None), slice(1, None, 2)), paddle.cos(position * rates))
    return table.unsqueeze(0)


class Attention(nn.Layer):
    def __init__(self, heads: int, d_model: int):
        super().__init__()
        self.heads, self.d_k = heads, d_model // heads
        self.linears = nn.LayerList([nn.Linear(d_model, d_model) for _ in range(4)])

    def forward(self, query, key, value, mask=None):
        batch = query.shape[0]
        q, k, v = (linear(x).reshape([batch, 0, self.heads, self.d_k]).transpose([0, 2, 1, 3])
                   for linear, x in zip(self.linears, (query, key, value)))
        score = paddle.matmul(q, k.transpose([0, 1, 3, 2]) / math.sqrt(self.d_k))
        if mask is not None:   # the head's masked_fill: score * not(mask == 0) + (mask == 0) * -6.55e4
            hidden = (mask == 0).astype(score.dtype)
            score = score * paddle.logical_not(hidden).astype(score.dtype) + hidden * -6.55e4
        out = paddle.matmul(F.softmax(score, axis=-1), v)
        return self.linears[3](out.transpose([0, 2, 1, 3]).reshape([batch, 0, self.heads * self.d_k]))


class DecoderLayer(nn.Layer):
    def __init__(self, heads: int, d_model: int, d_ff: int):
        super().__init__()
        self.self_attn, self.src_attn = Attention(heads, d_model), Attention(heads, d_model)
        self.w_1, self.w_2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norms = nn.LayerList([nn.LayerNorm(d_model) for _ in range(3)])   # pre-norm residual sublayers

    def forward(self, x, feature, tgt_mask):
        h = self.norms[0](x)
        x = x + self.self_attn(h, h, h, tgt_mask)
        h = self.norms[1](x)
        x = x + self.src_attn(h, feature, feature)
        return x + self.w_2(F.relu(self.w_1(self.norms[2](x))))


class Head(nn.Layer):
    def __init__(self, d_model: int, d_ff: int, heads: int = 8, loc_reg_num: int = 4):
        super().__init__()
        self.layers = nn.LayerList([DecoderLayer(heads, d_model, d_ff) for _ in range(2)])
        self.cls_layer, self.bbox_layer = DecoderLayer(heads, d_model, d_ff), DecoderLayer(heads, d_model, d_ff)
        self.cls_fc = nn.Linear(d_model, VOCAB)
        self.bbox_fc = nn.Sequential(nn.Linear(d_model, loc_reg_num), nn.Sigmoid())
        self.norm = nn.LayerNorm(d_model)
        self.lut = nn.Embedding(VOCAB, d_model)
        self.d_model = d_model
        self.pe = positional_table(d_model)

    def _mask(self, tokens):
        pad = (tokens != VOCAB - 1).unsqueeze(1).unsqueeze(3)
        length = tokens.shape[1]
        causal = paddle.tril(paddle.ones([length, length], dtype="float32"))
        return paddle.logical_and(pad.astype("float32"), causal).astype("float32")

    def forward(self, feature, structure):
        batch, channels, height, width = feature.shape
        memory = feature.reshape([batch, channels, height * width]).transpose([0, 2, 1])
        memory = memory + self.pe[:, :height * width]
        tokens = structure[:, :-1]
        mask = self._mask(tokens)
        x = self.lut(tokens) * math.sqrt(self.d_model)
        x = x + self.pe[:, :x.shape[1]]
        for layer in self.layers:
            x = layer(x, memory, mask)
        cls_x = self.norm(self.cls_layer(x, memory, mask))
        bbox_x = self.norm(self.bbox_layer(x, memory, mask))
        return self.cls_fc(cls_x), self.bbox_fc(bbox_x)


def table_master_loss(structure_logits, boxes, structure, bboxes, bbox_masks):
    """TableMasterLoss: mean cross entropy of the next tokens (PAD ignored), and the masked boxes' summed L1 of x and
    width, and of y and height, each over the number of boxes."""
    targets = structure[:, 1:].reshape([-1])
    structure_loss = nn.CrossEntropyLoss(ignore_index=VOCAB - 1)(
        structure_logits.reshape([-1, structure_logits.shape[-1]]), targets).mean()
    masks = bbox_masks[:, 1:]
    predicted, wanted = boxes * masks, bboxes[:, 1:, :] * masks
    count = masks.sum() + 1e-12
    horizon = nn.L1Loss(reduction="sum")(predicted[:, :, 0::2], wanted[:, :, 0::2]) / count
    vertical = nn.L1Loss(reduction="sum")(predicted[:, :, 1::2], wanted[:, :, 1::2]) / count
    return structure_loss + horizon.mean() + vertical.mean()


def build(shrink: int, feed: dict, layers=(1, 2, 5, 3)):
    """The training forward on ``feed``'s shapes (image, structure, bboxes, bbox_masks): its loss."""
    image = paddle.static.data("image", feed["image"].shape, str(feed["image"].dtype))
    structure = paddle.static.data("structure", feed["structure"].shape, "int64")
    bboxes = paddle.static.data("bboxes", feed["bboxes"].shape, str(feed["bboxes"].dtype))
    bbox_masks = paddle.static.data("bbox_masks", feed["bbox_masks"].shape, str(feed["bbox_masks"].dtype))   # [B, L, 1]
    d_model = 512 // shrink
    logits, boxes = Head(d_model, 2024 // shrink)(Backbone(shrink, layers)(image), structure)
    return table_master_loss(logits, boxes, structure, bboxes, bbox_masks)
