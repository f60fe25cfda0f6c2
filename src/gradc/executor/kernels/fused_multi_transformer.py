"""Kernel of gradc.ops.fused_multi_transformer: the decoder stack, one batch row at a time (the CUDA kernel removes
the padding beyond each row's seq_lengths and attends within a row), in float64 inside."""

from __future__ import annotations

import math

import numpy as np

from ...errors import ExecutionError
from ...ops.fused_multi_transformer import qkv_heads
from ...ops.interp import float32
from . import kernel
from .fused_llm import ACTIVATE
from .llm_attention import keys_from_layout, keys_to_layout, rotate


def _norm(h: np.ndarray, scale, bias, k) -> np.ndarray:
    """layernorm or rmsnorm over the last dim; bias only where the kernel reads the norm biases (ln_biases given)."""
    eps = k.attr("epsilon")
    if k.attr("norm_type") == "layernorm":
        y = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + eps)
    else:
        y = h / np.sqrt((h * h).mean(-1, keepdims=True) + eps)
    return y * scale + (0 if bias is None else bias)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


class _Layers:
    """The stack's weights in float64, layer by layer; a bias list the kernel does not read is None."""

    def __init__(self, k):
        def listed(slot: str, read: bool = True):
            values = k.xs(slot) if read else []
            return [value.astype(np.float64) for value in values] or None

        with_bias, with_norm_bias = k.has("qkv_biases"), k.has("ln_biases")
        self.w = {slot: listed(slot) for slot in ("ln_scales", "qkv_weights", "out_linear_weights", "ffn_ln_scales",
                                                  "ffn1_weights", "ffn2_weights")}
        self.b = {slot: listed(slot, with_bias) for slot in ("qkv_biases", "out_linear_biases", "ffn1_biases",
                                                           "ffn2_biases")}
        self.b |= {slot: listed(slot, with_norm_bias) for slot in ("ln_biases", "ffn_ln_biases")}
        self.count = len(self.w["qkv_weights"])

    def bias(self, slot: str, i: int):
        return None if self.b[slot] is None else self.b[slot][i]


class _Attention:
    """What the attention of every layer reads besides its weights: the caches in float64 with plain keys (the
    cache holds them in 16-byte chunks), the decoding step of each row, the mask, the rope table, the prefixes."""

    def __init__(self, k, x: np.ndarray):
        self.width = 16 // x.dtype.itemsize
        if k.xs("cache_kvs") and k.xs("cache_kvs")[0].shape[-1] % self.width:
            raise ExecutionError(f"{k.where}: head_dim {k.xs('cache_kvs')[0].shape[-1]} must be a multiple of the "
                                 f"cache's 16-byte chunk of {self.width} {x.dtype} values")
        self.caches = [np.stack([keys_from_layout(c[0].astype(np.float64), self.width), c[1].astype(np.float64)])
                       for c in k.xs("cache_kvs")] or None
        self.pre = [c.astype(np.float64) for c in k.xs("pre_caches")] or None
        self.mask = None if k.optional("src_mask") is None else k.x("src_mask").astype(np.float64)
        table = k.optional("rotary_tensor")
        self.table = table.astype(np.float64) if table is not None and k.attr("rotary_emb_dims") > 0 else None
        self.steps = None
        if k.optional("time_step") is not None:
            step = int(k.x("time_step").reshape(-1)[0])
            if step <= 0:
                raise ExecutionError(f"{k.where}: time_step must be > 0 (the kernel's check), got {step}")
            lengths = k.optional("seq_lengths")   # while decoding, each row's own step
            self.steps = np.full(len(x), step) if lengths is None else lengths.reshape(-1).astype(np.int64)
            if self.steps.max() >= self.caches[0].shape[3]:
                raise ExecutionError(f"{k.where}: decoding step {self.steps.max()} is past cache_kvs' "
                                     f"{self.caches[0].shape[3]} positions")
        if self.steps is not None and self.mask is not None and self.mask.shape[-1] < self.steps.max():
            raise ExecutionError(f"{k.where}: src_mask's {self.mask.shape[-1]} columns do not reach decoding step "
                                 f"{self.steps.max()}")

    def cache_outs(self, dtype) -> list[np.ndarray]:
        return [np.stack([keys_to_layout(c[0], self.width), c[1]]).astype(dtype) for c in self.caches]


def _rope(k, att: _Attention, row: int, n: int, q: np.ndarray, key: np.ndarray):
    """q [heads, n, dim] and key turned by the row's first n positions of the rotary table."""
    cos, sin = att.table[0, row, 0, :n], att.table[1, row, 0, :n]
    neox = k.attr("use_neox_rotary_style")
    if not neox and att.steps is None:   # the encoder's pair kernels read each pair's first cos and sin
        cos, sin = np.repeat(cos[..., 0::2], 2, -1), np.repeat(sin[..., 0::2], 2, -1)
    dims = k.attr("rotary_emb_dims")
    return rotate(q, cos, sin, neox, dims), rotate(key, cos, sin, neox, dims)


def _attention(k, layers: _Layers, i: int, h: np.ndarray, row: int, att: _Attention) -> np.ndarray:
    """Multi-head attention of one row's tokens h [n, e]: causal over them after the prefix, or (decoding) over the
    cache's first step positions and the token; writes prefix, k and v into the row's cache (plain keys)."""
    weight = layers.w["qkv_weights"][i]
    heads, kv_heads, dim = qkv_heads(list(weight.shape), k.attr("trans_qkvw"), k.attr("gqa_group_size"))
    rows = heads + 2 * kv_heads
    matrix = weight.reshape(rows * dim, -1).T if k.attr("trans_qkvw") else weight.reshape(weight.shape[0], -1)
    qkv = h @ matrix + (0 if layers.bias("qkv_biases", i) is None else layers.bias("qkv_biases", i).reshape(-1))
    qkv = qkv.reshape(len(h), rows, dim).transpose(1, 0, 2)   # [rows, n, dim]
    q, key, value = qkv[:heads], qkv[heads:heads + kv_heads], qkv[heads + kv_heads:]
    if att.table is not None:
        q, key = _rope(k, att, row, len(h), q, key)
    cache = None if att.caches is None else att.caches[i][:, row]
    scale = float32(1 / math.sqrt(dim))
    if att.steps is None:
        prefix = 0 if att.pre is None else att.pre[i].shape[3]
        if prefix:
            key = np.concatenate([att.pre[i][0, row], key], 1)
            value = np.concatenate([att.pre[i][1, row], value], 1)
        if cache is not None:
            cache[0][:, :key.shape[1]], cache[1][:, :key.shape[1]] = key, value
        bias = np.triu(np.full((len(h), key.shape[1]), -np.inf), prefix + 1)
    else:
        step = int(att.steps[row])
        cache[0][:, step], cache[1][:, step] = key[:, 0], value[:, 0]
        key, value = cache[0][:, :step + 1], cache[1][:, :step + 1]
        bias = np.zeros(step + 1)
        if att.mask is not None:   # the token's own column is not read
            bias = bias + np.concatenate([att.mask[row, :, :, :step], np.zeros(att.mask.shape[1:3] + (1,))], -1)
    shared = np.arange(heads) // (heads // kv_heads)   # query head h reads kv head h / (heads / kv_heads)
    scores = q @ key[shared].swapaxes(-1, -2) * scale + bias
    return (_softmax(scores) @ value[shared]).transpose(1, 0, 2).reshape(len(h), -1)


def _row(k, layers: _Layers, x: np.ndarray, row: int, att: _Attention) -> np.ndarray:
    """The stack over one row's tokens x [n, e]."""
    alpha = k.attr("residual_alpha") if k.attr("norm_type") == "layernorm" else 1.0
    method, pre = k.attr("act_method"), k.attr("pre_layer_norm")
    w, bias = layers.w, layers.bias

    def ffn(h: np.ndarray, i: int) -> np.ndarray:
        z = h @ w["ffn1_weights"][i] + (0 if bias("ffn1_biases", i) is None else bias("ffn1_biases", i))
        half = z.shape[-1] // 2
        act = ACTIVATE[method](z[..., :half]) * z[..., half:] if method in ("geglu", "swiglu") else ACTIVATE[method](z)
        return act @ w["ffn2_weights"][i] + (0 if bias("ffn2_biases", i) is None else bias("ffn2_biases", i))

    for i in range(layers.count):
        out_bias = 0 if bias("out_linear_biases", i) is None else bias("out_linear_biases", i)
        if pre:
            h = _norm(x, w["ln_scales"][i], bias("ln_biases", i), k)
            r = _attention(k, layers, i, h, row, att) @ w["out_linear_weights"][i] + out_bias + alpha * x
            f = ffn(_norm(r, w["ffn_ln_scales"][i], bias("ffn_ln_biases", i), k), i)
            x = f + (alpha * r if i < layers.count - 1 else r)   # the last layer's residual add has no alpha
        else:
            a = _attention(k, layers, i, x, row, att) @ w["out_linear_weights"][i] + out_bias
            r = _norm(a + alpha * x, w["ln_scales"][i], bias("ln_biases", i), k)
            x = _norm(ffn(r, i) + alpha * r, w["ffn_ln_scales"][i], bias("ffn_ln_biases", i), k)
    return x


@kernel("fused_multi_transformer")
def fused_multi_transformer(k):
    x = k.x("x")
    layers, att = _Layers(k), _Attention(k, x)
    lengths = k.optional("seq_lengths")
    out = np.zeros(x.shape)
    for row in range(x.shape[0]):
        if att.steps is not None:   # decoding: one token a row, a row at step 0 of seq_lengths is skipped
            n = 1 if lengths is None or att.steps[row] > 0 else 0
        else:
            n = x.shape[1] if lengths is None else int(lengths.reshape(-1)[row])
        if n:
            out[row, :n] = _row(k, layers, x[row, :n].astype(np.float64), row, att)
    results = {"out": out.astype(x.dtype)}
    if att.caches is not None and k.out_names("cache_kv_outs"):
        results["cache_kv_outs"] = att.cache_outs(x.dtype)
    return results
