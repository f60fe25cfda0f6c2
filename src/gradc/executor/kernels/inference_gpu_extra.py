"""Kernels of gradc.ops.inference_gpu_extra, computed in float64 and returned in the input's dtype."""

from __future__ import annotations

import numpy as np

from . import kernel


@kernel("qkv_unpack_mha")
def qkv_unpack_mha(k):
    q, key, value = k.x("q"), k.x("k"), k.x("v")
    if q.ndim != 4 or q.shape[1] != 1 or key.ndim != 4 or key.shape != value.shape \
            or (key.shape[0], *key.shape[2:]) != (q.shape[0], *q.shape[2:]):
        raise ValueError(f"needs q [B, 1, N, H] and k, v [B, S, N, H], got {list(q.shape)}, {list(key.shape)} and "
                         f"{list(value.shape)}")
    heads_first = (a.astype(np.float64).transpose(0, 2, 1, 3) for a in (q, key, value))   # [B, N, S, H]
    q64, k64, v64 = heads_first
    scores = q64 @ np.swapaxes(k64, -1, -2) / np.sqrt(q.shape[3])
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True) + 1e-6   # the kernel's 1 / (sum + 1e-6)
    return {"out": (weights @ v64).transpose(0, 2, 1, 3).astype(q.dtype)}


@kernel("fused_token_prune")
def fused_token_prune(k):
    attn, x, mask, kept = k.x("Attn"), k.x("X"), k.x("Mask"), k.x("NewMask").shape[2]
    if attn.ndim != 4 or mask.shape != attn.shape or x.ndim != 3 or x.shape[:2] != (attn.shape[0], attn.shape[3]) \
            or kept > x.shape[1]:
        raise ValueError(f"needs Attn and Mask [B, heads, S, S], X [B, S, C] and NewMask [B, heads, L, L] with L <= S, "
                         f"got {list(attn.shape)}, {list(mask.shape)}, {list(x.shape)} and "
                         f"{list(k.x('NewMask').shape)}")
    scores = np.where(mask >= 0, attn, 0).sum(axis=(1, 2))
    if k.attr("keep_first_token"):
        scores[:, 0] = np.finfo(scores.dtype).max
    order = np.argsort(-scores, axis=1, kind="stable")[:, :kept]
    if k.attr("keep_order"):
        order = np.sort(order, axis=1)
    return {"SlimmedX": np.take_along_axis(x, order[:, :, None], axis=1), "CLSInds": order.astype(np.int64)}
