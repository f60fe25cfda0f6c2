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


def _attention(k, layers: _Layers, i: int, h: np.ndarray, row: int, cache, step, mask) -> np.ndarray:
    """Multi-head attention of one row's tokens h [n, e]: causal over them, or (step) over the cache's first step
    positions and the token; writes k and v into cache [2, heads, max_len, head_dim] (this row's slice)."""
    weight = layers.w["qkv_weights"][i]
    heads, dim = qkv_heads(list(weight.shape), k.attr("trans_qkvw"))
    matrix = weight.reshape(3 * heads * dim, -1).T if k.attr("trans_qkvw") else weight.reshape(weight.shape[0], -1)
    qkv = h @ matrix + (0 if layers.bias("qkv_biases", i) is None else layers.bias("qkv_biases", i).reshape(-1))
    q, key, value = qkv.reshape(len(h), 3, heads, dim).transpose(1, 2, 0, 3)   # each [heads, n, dim]
    scale = float32(1 / math.sqrt(dim))
    if step is None:
        if cache is not None:
            cache[0][:, :len(h)], cache[1][:, :len(h)] = key, value
        scores = q @ key.swapaxes(-1, -2) * scale + np.triu(np.full((len(h), len(h)), -np.inf), 1)
    else:
        cache[0][:, step], cache[1][:, step] = key[:, 0], value[:, 0]
        key, value = cache[0][:, :step + 1], cache[1][:, :step + 1]
        scores = q @ key.swapaxes(-1, -2) * scale
        if mask is not None:
            scores = scores + mask[row, :, :, :step + 1]
    return (_softmax(scores) @ value).transpose(1, 0, 2).reshape(len(h), -1)


def _row(k, layers: _Layers, x: np.ndarray, row: int, caches, step, mask) -> np.ndarray:
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
        cache = None if caches is None else caches[i][:, row]
        out_bias = 0 if bias("out_linear_biases", i) is None else bias("out_linear_biases", i)
        if pre:
            h = _norm(x, w["ln_scales"][i], bias("ln_biases", i), k)
            r = _attention(k, layers, i, h, row, cache, step, mask) @ w["out_linear_weights"][i] + out_bias + alpha * x
            f = ffn(_norm(r, w["ffn_ln_scales"][i], bias("ffn_ln_biases", i), k), i)
            x = f + (alpha * r if i < layers.count - 1 else r)   # the last layer's residual add has no alpha
        else:
            a = _attention(k, layers, i, x, row, cache, step, mask) @ w["out_linear_weights"][i] + out_bias
            r = _norm(a + alpha * x, w["ln_scales"][i], bias("ln_biases", i), k)
            x = _norm(ffn(r, i) + alpha * r, w["ffn_ln_scales"][i], bias("ffn_ln_biases", i), k)
    return x


@kernel("fused_multi_transformer")
def fused_multi_transformer(k):
    x = k.x("x")
    layers = _Layers(k)
    caches = [c.astype(np.float64) for c in k.xs("cache_kvs")] or None
    step = None if k.optional("time_step") is None else int(k.x("time_step").reshape(-1)[0])
    if step is not None and step <= 0:
        raise ExecutionError(f"{k.where}: time_step must be > 0 (the kernel's check), got {step}")
    lengths = k.optional("seq_lengths")
    mask = None if k.optional("src_mask") is None else k.x("src_mask").astype(np.float64)
    out = np.zeros(x.shape)
    for row in range(x.shape[0]):
        n = x.shape[1] if lengths is None else int(lengths.reshape(-1)[row])
        out[row, :n] = _row(k, layers, x[row, :n].astype(np.float64), row, caches, step, mask)
    results = {"out": out.astype(x.dtype)}
    if caches is not None and k.out_names("cache_kv_outs"):
        results["cache_kv_outs"] = [c.astype(x.dtype) for c in caches]
    return results
