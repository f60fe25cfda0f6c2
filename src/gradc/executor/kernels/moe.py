"""Kernels of gradc.ops.moe: cal_aux_loss and its grad, in float64 inside."""

from __future__ import annotations

import numpy as np

from . import kernel


def _aux_terms(k) -> tuple[float, float, np.ndarray]:
    """(seqlen_float, scale, counts per expert) from the masks, as the kernel reduces them."""
    gate, clip_min = k.x("gate_prob"), float(np.float32(k.attr("clip_min")))
    tokens, dispatched = k.optional("tokens_mask"), k.optional("dispatch_tokens_mask")
    scale = 1.0
    if dispatched is not None:
        seqlen = float(np.count_nonzero(dispatched))
        if tokens is not None and dispatched.shape[0] != gate.shape[0]:
            scale = seqlen / max(float(tokens.astype(np.float64).sum()), clip_min)
    elif tokens is not None:
        seqlen = float(tokens.astype(np.float64).sum())
    else:
        seqlen = gate.shape[0] / k.attr("num_experts") * gate.shape[1]
    mask = k.x("dispatch_mask")
    counts = mask.sum(0) if mask.ndim == 2 else mask
    return max(seqlen, clip_min), scale, counts.astype(np.float64)


def _group(k) -> float:
    return k.attr("num_experts") / (k.attr("moe_k") if k.attr("use_group") else 1)


@kernel("cal_aux_loss")
def cal_aux_loss(k):
    gate = k.x("gate_prob")
    seqlen, scale, counts = _aux_terms(k)
    ce = counts / seqlen
    me = gate.astype(np.float64).sum(0) / seqlen
    loss = np.sum(ce * me) * _group(k) * scale
    return {"l_aux_loss": np.array(loss, gate.dtype), "seqlen_float": np.array(seqlen, gate.dtype),
            "ce": ce.astype(gate.dtype)}


@kernel("cal_aux_loss_grad")
def cal_aux_loss_grad(k):
    gate, ce = k.x("gate_prob"), k.x("ce").astype(np.float64)
    dloss = float(k.x("l_aux_loss@GRAD")) * _group(k) / float(k.x("seqlen_float"))
    return k.grads({"gate_prob@GRAD": lambda: np.broadcast_to(ce * dloss, gate.shape).astype(gate.dtype)})
