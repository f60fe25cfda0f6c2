"""The heads of tools/paddleocr_ppocrv4_rec.py's PP-OCRv4 recognizer: the NRTR branch (rec_nrtr_head.py's Transformer
decoder, no encoder: TransformerBlocks of self-attention under the causal mask, cross-attention to the image
columns, a ReLU MLP, post-norm; the scaled embeddings, the sinusoidal positions), MultiLoss's CTCLoss and NRTRLoss,
and the Linear and MLP the SVTR neck shares with them."""

from __future__ import annotations

import math

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn


def linear(width_in, width_out, bias=True):   # the SVTR neck's and NRTR's Linear init (drawn, then seeded)
    return nn.Linear(width_in, width_out, bias_attr=None if bias else False)


class Mlp(nn.Layer):
    def __init__(self, dim, hidden, act):
        super().__init__()
        self.fc1, self.fc2, self.act = linear(dim, hidden), linear(hidden, dim), act

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class CrossOrSelf(nn.Layer):   # rec_nrtr_head's MultiheadAttention: a fused qkv for self-attention, q and kv else
    def __init__(self, dim, heads, self_attention):
        super().__init__()
        self.heads, self.dim, self.scale, self.self_attention = heads, dim, (dim // heads) ** -0.5, self_attention
        if self_attention:
            self.qkv = linear(dim, dim * 3)
        else:
            self.q, self.kv = linear(dim, dim), linear(dim, dim * 2)
        self.out_proj = linear(dim, dim)

    def forward(self, query, key=None, mask=None):
        head = self.dim // self.heads
        if self.self_attention:
            qkv = self.qkv(query).reshape([0, query.shape[1], 3, self.heads, head]).transpose([2, 0, 3, 1, 4])
            q, k, v = qkv[0], qkv[1], qkv[2]
        else:
            q = self.q(query).reshape([0, query.shape[1], self.heads, head]).transpose([0, 2, 1, 3])
            kv = self.kv(key).reshape([0, key.shape[1], 2, self.heads, head]).transpose([2, 0, 3, 1, 4])
            k, v = kv[0], kv[1]
        attention = q.matmul(k.transpose([0, 1, 3, 2])) * self.scale
        if mask is not None:
            attention += mask
        x = F.softmax(attention, axis=-1).matmul(v).transpose([0, 2, 1, 3]).reshape([0, query.shape[1], self.dim])
        return self.out_proj(x)


class DecoderBlock(nn.Layer):   # TransformerBlock with self- and cross-attention, post-norm
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.self_attn, self.cross_attn = CrossOrSelf(dim, heads, True), CrossOrSelf(dim, heads, False)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(dim, epsilon=1e-5) for _ in range(3))
        self.mlp = Mlp(dim, hidden, F.relu)

    def forward(self, tgt, memory, mask):
        tgt = self.norm1(tgt + self.self_attn(tgt, mask=mask))
        tgt = self.norm2(tgt + self.cross_attn(tgt, key=memory))
        return self.norm3(tgt + self.mlp(tgt))


def _positions(length: int, dim: int) -> np.ndarray:   # PositionalEncoding's pe rows, computed in float32
    position = np.arange(length, dtype=np.float32)[:, None]
    div = np.exp(np.arange(0, dim, 2).astype(np.float32) * np.float32(-math.log(10000.0) / dim))
    pe = np.zeros((length, dim), np.float32)
    pe[:, 0::2], pe[:, 1::2] = np.sin(position * div), np.cos(position * div)
    return pe


class NRTR(nn.Layer):   # MultiHead's before_gtc and Transformer.forward_train (no encoder layers)
    def __init__(self, channels, dim, layers, classes):
        super().__init__()
        self.before = linear(channels, dim, bias=False)
        self.dim, self.classes = dim, classes + 1
        normal = paddle.ParamAttr(initializer=nn.initializer.Normal(0.0, dim ** -0.5))
        self.embedding = nn.Embedding(self.classes, dim, padding_idx=0, weight_attr=normal)
        self.decoder = nn.LayerList([DecoderBlock(dim, dim // 32, dim * 4) for _ in range(layers)])
        self.project = nn.Linear(dim, self.classes, weight_attr=normal, bias_attr=False)

    def forward(self, features, target):
        memory = self.before(features.flatten(2).transpose([0, 2, 1]))
        length = target.shape[1] - 1
        dtype = paddle.get_default_dtype()
        tgt = self.embedding(target[:, :-1]) * math.sqrt(self.dim)
        tgt = tgt + paddle.assign(_positions(length, self.dim).astype(dtype))
        causal = np.triu(np.full((length, length), -np.inf, np.float32), 1)[None, None]
        mask = paddle.assign(causal.astype(dtype))
        for block in self.decoder:
            tgt = block(tgt, memory, mask)
        return self.project(tgt)


def ctc_loss(logits, label, length):   # ppocr/losses/rec_ctc_loss.py's CTCLoss
    steps, batch = logits.shape[1], logits.shape[0]
    lengths = paddle.full([batch], steps, "int64")
    loss = F.ctc_loss(logits.transpose([1, 0, 2]), label.astype("int32"), lengths, length, reduction="none")
    return loss.mean()


def nrtr_loss(logits, target, eps=0.1):   # ppocr/losses/rec_nrtr_loss.py's NRTRLoss with smoothing
    classes = logits.shape[2]
    pred, tgt = logits.reshape([-1, classes]), target[:, 1:].reshape([-1])
    one_hot = F.one_hot(tgt, classes).astype(logits.dtype)
    one_hot = one_hot * (1 - eps) + (1 - one_hot) * eps / (classes - 1)
    loss = -(one_hot * F.log_softmax(pred, axis=1)).sum(axis=1)
    return loss.masked_select(tgt != 0).mean()
