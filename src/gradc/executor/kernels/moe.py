"""Kernels of gradc.ops.moe: cal_aux_loss, moe_gate_dispatch, moe_combine, moe_combine_no_weight and their grads."""

from __future__ import annotations

import numpy as np

from ...errors import ExecutionError
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


def _routes(probs: np.ndarray, bias, k: int) -> np.ndarray:
    """expert_id [s, k]: each row's top k of probs + bias, ties to the lower expert."""
    scores = probs if bias is None else probs + bias.astype(probs.dtype)
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def _dispatch(k, pad: bool) -> dict:
    """moe_gate_dispatch's outputs (y [e capacity, d] with pad, else [s k, d])."""
    x, probs = k.x("x"), k.x("gate_logits")
    top, capacity = k.attr("k"), k.attr("capacity")
    tokens, experts = probs.shape
    expert_id = _routes(probs, k.optional("corr_bias"), top)
    weights = np.take_along_axis(probs, expert_id, 1).copy()
    flat = expert_id.reshape(-1)   # choice c = t k + j
    order = np.lexsort((np.arange(flat.size) % top, flat)) if pad else np.argsort(flat, kind="stable")
    offsets = np.cumsum(np.bincount(flat, minlength=experts))
    scatter = np.zeros((top, tokens), np.int32)
    y = np.zeros((experts * capacity if pad else tokens * top, x.shape[1]), x.dtype)
    for row, choice in enumerate(order):
        token, j, expert = choice // top, choice % top, flat[choice]
        start = offsets[expert - 1] if expert else 0
        if row - start >= capacity:
            weights[token, j] = 0
            continue
        scatter[j, token] = expert * capacity + row - start if pad else row
        y[scatter[j, token]] = x[token]
    return {"y": y, "combine_weights": weights, "scatter_index": scatter, "expert_offset": offsets.astype(np.int64),
            "expert_id": expert_id.astype(np.int32)}


@kernel("moe_gate_dispatch", "moe_gate_dispatch_auto")
def moe_gate_dispatch(k):
    return _dispatch(k, k.attr("use_pad"))


@kernel("moe_gate_dispatch_permute")
def moe_gate_dispatch_permute(k):
    """The padded dispatch with y's expert-major rows laid out [local expert, rank, capacity, d] (expert e = rank
    local_experts + local expert), the layout an all-to-all sends by rank."""
    out, world = _dispatch(k, True), k.attr("world_size")
    experts, dim = k.x("gate_logits").shape[1], k.x("x").shape[1]
    y = out["y"].reshape(world, experts // world, k.attr("capacity"), dim)
    return {**out, "y": np.ascontiguousarray(y.transpose(1, 0, 2, 3))}


def _declared_experts(k) -> int:
    """gate_logits@GRAD's expert count: the grad op reads no input that has it, so its var's declared shape."""
    var = k.block.find_var(k.out_names("gate_logits@GRAD")[0])
    if var is None or not var.shape or len(var.shape) != 2 or var.shape[1] < 0:
        raise ExecutionError(f"{k.where}: gate_logits@GRAD must be declared [tokens, experts] with a known expert "
                             f"count, got {None if var is None else var.shape}")
    return var.shape[1]


def _dispatch_grads(k, dy: np.ndarray, experts) -> dict:
    """x@GRAD and gate_logits@GRAD of a dispatch, dy [e capacity, d] (or [s k, d]) in scatter_index's rows."""
    weights, scatter, expert_id = k.x("combine_weights"), k.x("scatter_index"), k.x("expert_id")
    dweights = k.x("combine_weights@GRAD")
    kept = weights > 0

    def dx():
        rows = dy[scatter.T.astype(np.int64)].astype(np.float64) * kept[..., None]
        return rows.sum(1).astype(dy.dtype)

    def dgate():
        grad = np.zeros((weights.shape[0], experts()), dweights.dtype)
        tokens, ranks = np.nonzero(kept)
        grad[tokens, expert_id[tokens, ranks]] = dweights[tokens, ranks]
        return grad

    return k.grads({"x@GRAD": dx, "gate_logits@GRAD": dgate})


@kernel("moe_gate_dispatch_grad", "moe_gate_dispatch_auto_grad")
def moe_gate_dispatch_grad(k):
    return _dispatch_grads(k, k.x("y@GRAD"), lambda: _declared_experts(k))


@kernel("moe_gate_dispatch_permute_grad")
def moe_gate_dispatch_permute_grad(k):
    dy = k.x("y@GRAD")   # [local experts, ranks, capacity, d]: back to expert-major rows
    rows = np.ascontiguousarray(dy.transpose(1, 0, 2, 3)).reshape(-1, dy.shape[-1])
    return _dispatch_grads(k, rows, lambda: dy.shape[0] * dy.shape[1])


@kernel("moe_combine", "moe_combine_auto")
def moe_combine(k):
    x, weights, index = k.x("x"), k.x("combine_weights"), k.x("scatter_index").astype(np.int64)
    return {"y": np.einsum("tj,tjd->td", weights.astype(np.float64), x[index]).astype(x.dtype)}


@kernel("moe_combine_grad", "moe_combine_auto_grad")
def moe_combine_grad(k):
    x, weights, index = k.x("x"), k.x("combine_weights"), k.x("scatter_index").astype(np.int64)
    dy = k.x("y@GRAD").astype(np.float64)

    def dx():
        grad = np.zeros(x.shape, np.float64)
        np.add.at(grad, index, weights[..., None] * dy[:, None])
        return grad.astype(x.dtype)

    grads = {"x@GRAD": dx,
             "combine_weights@GRAD": lambda: np.einsum("td,tjd->tj", dy, x[index]).astype(weights.dtype)}
    if k.op.type == "moe_combine_auto_grad":   # declared as Paddle declares it; an index has no gradient: zeros
        grads["scatter_index@GRAD"] = lambda: np.zeros_like(k.x("scatter_index"))
    return k.grads(grads)


@kernel("moe_combine_no_weight")
def moe_combine_no_weight(k):
    x, index = k.x("x"), k.x("scatter_index").astype(np.int64)
    return {"y": x[index].astype(np.float64).sum(1).astype(x.dtype)}


@kernel("moe_combine_no_weight_grad")
def moe_combine_no_weight_grad(k):
    x, index, dy = k.x("x"), k.x("scatter_index").astype(np.int64), k.x("y@GRAD")

    def dx():   # accumulated: Paddle's kernel assigns, so a row read twice keeps one of its grads
        grad = np.zeros(x.shape, np.float64)
        np.add.at(grad, index, np.broadcast_to(dy[:, None], (*index.shape, dy.shape[1])))
        return grad.astype(x.dtype)

    return k.grads({"x@GRAD": dx})
