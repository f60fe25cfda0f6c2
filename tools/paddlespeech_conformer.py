"""PaddleSpeech's U2 Conformer encoder with its CTC loss, as it trains (the CTC branch of U2Model.forward, ctc_weight
1): Conv2dSubsampling4 (two stride-2 3x3 convolutions and a Linear), RelPositionalEncoding (x * sqrt(d) and a sine
table), ConformerEncoderLayer (macaron feed-forward halves with Swish, relative-position self-attention with
pos_bias_u / pos_bias_v and linear_pos, the convolution module: pointwise conv, GLU, depthwise conv, BatchNorm1D,
Swish, pointwise conv, padding masked), pre-norm and a final LayerNorm; CTCDecoderBase's ctc_lo and CTCLoss (warpctc
over [T, B, V] logits, summed, divided by the batch). Rebuilt with Paddle's layers from PaddleSpeech's
paddlespeech/s2t/modules (encoder.py, encoder_layer.py, attention.py, conformer_convolution.py, subsampling.py,
embedding.py, ctc.py, loss.py; develop), sizes of a small config, dropout 0. masked_fill is paddle.where in static
mode. For tools/zoo_train_static.py."""

from __future__ import annotations

import math

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

FEATS, FRAMES, WIDTH, HEADS, FFN, KERNEL, LAYERS, VOCAB = 16, 48, 32, 4, 64, 15, 2, 12


def swish(x):
    return x * F.sigmoid(x)   # PaddleSpeech's own Swish layer


class FeedForward(nn.Layer):
    def __init__(self):
        super().__init__()
        self.w_1, self.w_2 = nn.Linear(WIDTH, FFN), nn.Linear(FFN, WIDTH)

    def forward(self, x):
        return self.w_2(swish(self.w_1(x)))


class RelPositionAttention(nn.Layer):
    def __init__(self):
        super().__init__()
        self.d_k = WIDTH // HEADS
        self.linear_q, self.linear_k, self.linear_v, self.linear_out = (nn.Linear(WIDTH, WIDTH) for _ in range(4))
        self.linear_pos = nn.Linear(WIDTH, WIDTH, bias_attr=False)
        xavier = nn.initializer.XavierUniform()
        self.pos_bias_u = self.create_parameter([HEADS, self.d_k], default_initializer=xavier)
        self.pos_bias_v = self.create_parameter([HEADS, self.d_k], default_initializer=xavier)

    def _heads(self, x):   # (batch, head, time, d_k)
        return x.reshape([0, -1, HEADS, self.d_k]).transpose([0, 2, 1, 3])

    def forward(self, x, pos_emb, keep):
        q = self._heads(self.linear_q(x)).transpose([0, 2, 1, 3])   # (batch, time, head, d_k)
        k, v = self._heads(self.linear_k(x)), self._heads(self.linear_v(x))
        p = self._heads(self.linear_pos(pos_emb))
        matrix_ac = paddle.matmul((q + self.pos_bias_u).transpose([0, 2, 1, 3]), k, transpose_y=True)
        matrix_bd = paddle.matmul((q + self.pos_bias_v).transpose([0, 2, 1, 3]), p, transpose_y=True)
        scores = (matrix_ac + matrix_bd) / math.sqrt(self.d_k)
        keep = keep.unsqueeze(1)   # (batch, 1, 1, time2)
        scores = paddle.where(keep, scores, paddle.full_like(scores, -float("inf")))
        attn = paddle.where(keep, F.softmax(scores, axis=-1), paddle.zeros_like(scores))
        out = paddle.matmul(attn, v).transpose([0, 2, 1, 3]).reshape([0, -1, WIDTH])
        return self.linear_out(out)


class ConvolutionModule(nn.Layer):
    def __init__(self):
        super().__init__()
        self.pointwise_conv1 = nn.Conv1D(WIDTH, 2 * WIDTH, 1)
        self.depthwise_conv = nn.Conv1D(WIDTH, WIDTH, KERNEL, padding=(KERNEL - 1) // 2, groups=WIDTH)
        self.norm = nn.BatchNorm1D(WIDTH)
        self.pointwise_conv2 = nn.Conv1D(WIDTH, WIDTH, 1)

    def forward(self, x, keep):
        x = x.transpose([0, 2, 1])
        x = paddle.where(keep, x, paddle.zeros_like(x))   # mask_pad (batch, 1, time)
        x = F.glu(self.pointwise_conv1(x), axis=1)
        x = self.pointwise_conv2(swish(self.norm(self.depthwise_conv(x))))
        return paddle.where(keep, x, paddle.zeros_like(x)).transpose([0, 2, 1])


class ConformerLayer(nn.Layer):
    def __init__(self):
        super().__init__()
        self.feed_forward_macaron, self.self_attn = FeedForward(), RelPositionAttention()
        self.conv_module, self.feed_forward = ConvolutionModule(), FeedForward()
        self.norm_ff_macaron, self.norm_mha, self.norm_conv, self.norm_ff, self.norm_final = (
            nn.LayerNorm(WIDTH, epsilon=1e-12) for _ in range(5))

    def forward(self, x, pos_emb, keep):
        x = x + 0.5 * self.feed_forward_macaron(self.norm_ff_macaron(x))
        x = x + self.self_attn(self.norm_mha(x), pos_emb, keep)
        x = x + self.conv_module(self.norm_conv(x), keep)
        x = x + 0.5 * self.feed_forward(self.norm_ff(x))
        return self.norm_final(x)


def _sine_table(length: int) -> np.ndarray:
    position = np.arange(length, dtype="float32")[:, None]
    rate = np.exp(np.arange(0, WIDTH, 2, dtype="float32") * -(math.log(10000.0) / WIDTH))
    table = np.zeros((1, length, WIDTH), "float32")
    table[0, :, 0::2], table[0, :, 1::2] = np.sin(position * rate), np.cos(position * rate)
    return table


class ConformerCTC(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2D(1, WIDTH, 3, 2), nn.ReLU(), nn.Conv2D(WIDTH, WIDTH, 3, 2), nn.ReLU())
        self.out = nn.Linear(WIDTH * (((FEATS - 1) // 2 - 1) // 2), WIDTH)
        self.encoders = nn.LayerList([ConformerLayer() for _ in range(LAYERS)])
        self.after_norm = nn.LayerNorm(WIDTH, epsilon=1e-12)
        self.ctc_lo = nn.Linear(WIDTH, VOCAB)

    def forward(self, speech, speech_lengths, text, text_lengths):
        frames = paddle.arange(FRAMES, dtype="int64").unsqueeze(0)
        keep = (frames < speech_lengths.unsqueeze(1)).unsqueeze(1)   # make_non_pad_mask, (batch, 1, time)
        x = self.conv(speech.unsqueeze(1))   # (batch, channels, time', feats')
        x = self.out(x.transpose([0, 2, 1, 3]).reshape([0, 0, -1]))
        keep = keep[:, :, :-2:2][:, :, :-2:2]   # Conv2dSubsampling4's mask
        length = (((FRAMES - 1) // 2 - 1) // 2)
        x = x * math.sqrt(WIDTH)
        pos_emb = paddle.assign(_sine_table(length).astype(paddle.get_default_dtype()))
        for layer in self.encoders:
            x = layer(x, pos_emb, keep)
        x = self.after_norm(x)
        lengths = keep.astype("int64").sum(-1).squeeze(1)
        logits = self.ctc_lo(x).transpose([1, 0, 2])   # CTCLoss: (time, batch, vocab)
        loss = F.ctc_loss(logits, text.astype("int32"), lengths, text_lengths, blank=0, reduction="none")
        return loss.sum() / speech.shape[0]


def feed(rng, batch: int = 2) -> dict:
    """Fbank-like features, the second utterance 36 of 48 frames, labels of 4 and 3 ids (0 is blank)."""
    text = rng.integers(1, VOCAB, (batch, 4)).astype("int64")
    text[1, 3] = 0
    return {"speech": rng.standard_normal((batch, FRAMES, FEATS)).astype("float32"),
            "speech_lengths": np.array([FRAMES, 36][:batch], "int64"), "text": text,
            "text_lengths": np.array([4, 3][:batch], "int64")}


def build(values: dict):
    data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in values.items()}
    return ConformerCTC()(**data)
