"""Kernels of gradc.ops.flash_attention_varlen: flash_attn_varlen_qkvpacked and its grad, flash_attn_unpadded's
sequences (gradc.executor.kernels.flash_attention) on the slices of the packed qkv."""

from __future__ import annotations

import numpy as np

from . import kernel
from .flash_attention import unpadded_attend, unpadded_grads


def _unpacked(k) -> tuple:
    """q [total, h, d], k and v [total, hk, d] of qkv [total, h / hk + 2, hk, d] in float64."""
    qkv = np.asarray(k.x("qkv"), np.float64)
    total, groups, kv_heads, d = qkv.shape
    return qkv[:, :-2].reshape(total, (groups - 2) * kv_heads, d), qkv[:, -2], qkv[:, -1]


@kernel("flash_attn_varlen_qkvpacked")
def flash_attn_varlen_qkvpacked(k):
    dtype = k.x("qkv").dtype
    out, state = unpadded_attend(k, *_unpacked(k), dtype, k.attr("varlen_padded"))
    return k.grads({"out": lambda: out.astype(dtype), **state})


@kernel("flash_attn_varlen_qkvpacked_grad")
def flash_attn_varlen_qkvpacked_grad(k):
    qkv = k.x("qkv")
    dq, dk, dv = unpadded_grads(k, *_unpacked(k), np.asarray(k.x("out@GRAD"), np.float64), k.attr("varlen_padded"))
    grad = np.concatenate([dq.reshape(qkv.shape[0], -1, *qkv.shape[2:]), dk[:, None], dv[:, None]], axis=1)
    return k.grads({"qkv@GRAD": lambda: grad.astype(qkv.dtype)})
