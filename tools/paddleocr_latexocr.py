"""PaddleOCR's LaTeX-OCR decoder as it trains: LaTeXOCRHead's training forward (the x-transformers Decoder its config
builds: depth 4, causal self-attention and cross-attention to the encoder's output, both with attention on attention
(a GLU after the output projection), GEGLU feed-forward blocks, pre-norm; token and absolute position embeddings;
the padding mask), run teacher-forced on the formula's tokens, and LaTeXOCRLoss (cross entropy of the next token).
Rebuilt with Paddle's layers from PaddleOCR's ppocr/modeling/heads/rec_latexocr_head.py and
ppocr/losses/rec_latexocr_loss.py (read at its main branch), on a fed encoder output (the hybrid ResNetV2-ViT
encoder is left out); widths are the head's divided by ``shrink``. Its masked_fill_ is paddle.where in static mode.
For tools/paddleocr_train_static.py."""

from __future__ import annotations

import paddle
import paddle.nn.functional as F
from paddle import nn

TOKENS, MAX_LEN, DEPTH = 8000, 512, 4


class Attention(nn.Layer):
    def __init__(self, dim: int, heads: int, dim_head: int, causal: bool):
        super().__init__()
        self.heads, self.scale, self.causal = heads, dim_head ** -0.5, causal
        inner = dim_head * heads
        self.to_q = nn.Linear(dim, inner, bias_attr=False)
        self.to_k = nn.Linear(dim, inner, bias_attr=False)
        self.to_v = nn.Linear(dim, inner, bias_attr=False)
        self.to_out = nn.Sequential(nn.Linear(inner, dim * 2), nn.GLU())   # attention on attention

    def _heads(self, x):
        batch, length, width = x.shape
        return x.reshape([batch, length, self.heads, width // self.heads]).transpose([0, 2, 1, 3])

    def forward(self, x, mask, context=None):
        batch, length, _ = x.shape
        source = x if context is None else context
        q, k, v = self._heads(self.to_q(x)), self._heads(self.to_k(source)), self._heads(self.to_v(source))
        q_mask = mask
        k_mask = mask if context is None else paddle.ones((batch, k.shape[-2])).cast(paddle.bool)
        allowed = q_mask.reshape([batch, 1, length, 1]) * k_mask.reshape([batch, 1, 1, k_mask.shape[1]])
        dots = paddle.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
        lowest = -paddle.finfo(dots.dtype).max
        dots = paddle.where(~allowed.cast(paddle.bool), paddle.full_like(dots, lowest), dots)
        if self.causal:
            steps = paddle.arange(length)
            future = steps.reshape([1, 1, length, 1]) < steps.reshape([1, 1, 1, length])
            future = F.pad(future.cast(paddle.int32), (0, 0, 0, 0), value=False)   # j - i = 0 rows of padding
            dots = paddle.where(future.cast(paddle.bool), paddle.full_like(dots, lowest), dots)
        out = paddle.einsum("b h i j, b h j d -> b h i d", F.softmax(dots, axis=-1), v)
        out = out.transpose([0, 2, 1, 3]).reshape([batch, length, -1])
        return self.to_out(out)


class GEGLUFeedForward(nn.Layer):
    def __init__(self, dim: int, mult: int = 4):
        super().__init__()
        self.proj = nn.Linear(dim, dim * mult * 2)
        self.out = nn.Linear(dim * mult, dim)

    def forward(self, x):
        value, gate = self.proj(x).chunk(2, axis=-1)
        return self.out(value * F.gelu(gate))


class Decoder(nn.Layer):
    def __init__(self, dim: int, heads: int, dim_head: int, tokens: int):
        super().__init__()
        blocks = []
        for _ in range(DEPTH):   # the layer types a, c, f: self-attention, cross-attention, feed-forward
            blocks += [Attention(dim, heads, dim_head, causal=True), Attention(dim, heads, dim_head, causal=False),
                       GEGLUFeedForward(dim)]
        self.blocks = nn.LayerList(blocks)
        self.norms = nn.LayerList([nn.LayerNorm(dim) for _ in blocks])
        self.token_emb = nn.Embedding(tokens, dim, weight_attr=nn.initializer.Normal(std=0.02))
        self.pos_emb = nn.Embedding(MAX_LEN, dim, weight_attr=nn.initializer.Normal(std=0.02))
        self.norm = nn.LayerNorm(dim)
        self.to_logits = nn.Linear(dim, tokens)

    def forward(self, tokens, mask, context):
        x = self.token_emb(tokens)
        x = x + self.pos_emb(paddle.arange(tokens.shape[1]))[None, :, :]
        for index, (norm, block) in enumerate(zip(self.norms, self.blocks)):
            kind = index % 3
            h = norm(x)
            x = x + (block(h, mask) if kind == 0 else block(h, mask, context) if kind == 1 else block(h))
        return self.to_logits(self.norm(x))


def build(shrink: int, feed: dict):
    """LaTeXOCRHead's training forward and LaTeXOCRLoss on ``feed`` (encoded, tokens, mask): the loss."""
    encoded = paddle.static.data("encoded", feed["encoded"].shape, str(feed["encoded"].dtype))
    tokens = paddle.static.data("tokens", feed["tokens"].shape, "int64")
    mask = paddle.static.data("mask", feed["mask"].shape, "int64")
    decoder = Decoder(256 // shrink, 8, 64 // shrink, TOKENS // shrink)
    logits = decoder(tokens[:, :-1], mask.cast(paddle.bool)[:, :-1], encoded)
    labels = tokens[:, 1:]
    return nn.CrossEntropyLoss(reduction="mean", ignore_index=-100)(
        logits.reshape([-1, logits.shape[-1]]), labels.reshape([-1]))
