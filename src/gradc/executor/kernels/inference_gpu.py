"""Kernels of gradc.ops.inference_gpu: each op's unfused layers computed in float64 (as Paddle's CPU run of them,
which the fixtures hold), returned in the input's dtype; fused_conv2d_add_act runs gradc's conv2d kernel."""

from __future__ import annotations

import numpy as np

from . import KERNELS, kernel
from .activation import sigmoid


def _softmax(scores):
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _attention(q, k, v, alpha: float, mask=None):
    """softmax(alpha q k^T + mask) v over [B, N, S, H], heads side by side: [B, S, N * H]."""
    scores = alpha * q @ np.swapaxes(k, -1, -2)
    context = _softmax(scores if mask is None else scores + mask) @ v
    b, n, s, h = context.shape
    return context.transpose(0, 2, 1, 3).reshape(b, s, n * h)


def _layer_norm(h, scale, bias, epsilon: float, axis: int):
    """h normalized over its dims from ``axis``: (out, mean, variance), the stats one per row."""
    rows = h.reshape(int(np.prod(h.shape[:axis])), -1)
    mean, variance = rows.mean(1), rows.var(1)
    out = (rows - mean[:, None]) / np.sqrt(variance[:, None] + epsilon)
    if scale is not None:
        out = out * scale.reshape(-1)
    if bias is not None:
        out = out + bias.reshape(-1)
    return out.reshape(h.shape), mean, variance


def _wide(a):
    return None if a is None else a.astype(np.float64)


@kernel("multihead_matmul")
def multihead_matmul(k):
    x, w, bias, mask = (_wide(k.optional(slot)) for slot in ("Input", "W", "Bias", "BiasQK"))
    heads = k.attr("head_number")
    if x.ndim != 3 or w.ndim != 3 or w.shape[:2] != (x.shape[2], 3) or bias.size != 3 * w.shape[2] \
            or w.shape[2] % heads:
        raise ValueError(f"needs Input [B, S, hidden], W [hidden, 3, N * H] and Bias [3, N * H] with head_number "
                         f"{heads} dividing N * H, got {list(x.shape)}, {list(w.shape)} and {list(bias.shape)}")
    (b, s, hidden), size = x.shape, w.shape[2]
    qkv = x.reshape(b * s, hidden) @ w.reshape(hidden, 3 * size) + bias.reshape(-1)
    q, kk, v = qkv.reshape(b, s, 3, heads, size // heads).transpose(2, 0, 3, 1, 4)
    if mask is not None:   # the GPU kernel's broadcasts: by numel, [B, 1, 1, S] or [1, 1, S, S]
        shapes = {b * heads * s * s: (b, heads, s, s), b * s: (b, 1, 1, s), s * s: (1, 1, s, s)}
        if mask.size not in shapes:
            raise ValueError(f"BiasQK {list(mask.shape)} must be [B, N, S, S], [B, 1, 1, S] or [1, 1, S, S] for "
                             f"B {b}, N {heads}, S {s}")
        mask = mask.reshape(shapes[mask.size])
    return {"Out": _attention(q, kk, v, k.attr("alpha"), mask).astype(k.x("Input").dtype)}


@kernel("skip_layernorm")
def skip_layernorm(k):
    x, y = k.x("X"), k.x("Y")
    if x.shape != y.shape:
        raise ValueError(f"X {list(x.shape)} and Y {list(y.shape)} must have one shape")
    scale, bias = k.x("Scale"), k.x("Bias")
    if scale.size != x.shape[-1] or bias.size != x.shape[-1]:
        raise ValueError(f"Scale and Bias need {x.shape[-1]} values (X's last dim), got {scale.size} and {bias.size}")
    out, _, _ = _layer_norm(_wide(x) + _wide(y), _wide(scale), _wide(bias), k.attr("epsilon"), x.ndim - 1)
    return {"Out": out.astype(x.dtype)}


@kernel("fused_embedding_eltwise_layernorm")
def fused_embedding_eltwise_layernorm(k):
    ids, embs = k.xs("Ids"), k.xs("Embs")
    if len(ids) != len(embs) or not ids:
        raise ValueError(f"needs one Embs per Ids, got {len(embs)} Embs for {len(ids)} Ids")
    shape, hidden = ids[0].shape[:2], embs[0].shape[-1]
    summed = np.zeros((*shape, hidden))
    for i, (index, table) in enumerate(zip(ids, embs)):
        index = index.reshape(index.shape[:2]) if index.ndim == 3 and index.shape[2] == 1 else index
        if index.shape != shape or table.ndim != 2 or table.shape[1] != hidden:
            raise ValueError(f"Ids[{i}] {list(index.shape)} and Embs[{i}] {list(table.shape)} must be {list(shape)} "
                             f"and [rows, {hidden}]")
        if index.size and (index.min() < 0 or index.max() >= table.shape[0]):
            raise ValueError(f"Ids[{i}] holds ids outside Embs[{i}]'s {table.shape[0]} rows")
        summed += table.astype(np.float64)[index]
    out, _, _ = _layer_norm(summed, _wide(k.x("Scale")), _wide(k.x("Bias")), k.attr("epsilon"), 2)
    return {"Out": out.astype(embs[0].dtype)}


@kernel("fused_fc_elementwise_layernorm")
def fused_fc_elementwise_layernorm(k):
    x, w, y = k.x("X"), k.x("W"), k.x("Y")
    cols = k.attr("x_num_col_dims")
    rows = x.reshape(int(np.prod(x.shape[:cols])), -1).astype(np.float64)
    if w.ndim != 2 or rows.shape[1] != w.shape[0] or rows.shape[0] * w.shape[1] != y.size:
        raise ValueError(f"X {list(x.shape)} (x_num_col_dims {cols}) times W {list(w.shape)} must fill Y "
                         f"{list(y.shape)}")
    h = rows @ w.astype(np.float64)
    if (bias := k.optional("Bias0")) is not None:
        h = h + bias.reshape(-1)
    if k.attr("activation_type") == "relu":
        h = np.maximum(h, 0)
    axis = k.attr("begin_norm_axis")
    out, mean, variance = _layer_norm(h.reshape(y.shape) + y, _wide(k.optional("Scale")), _wide(k.optional("Bias1")),
                                      k.attr("epsilon"), axis)
    return {"Out": out.astype(x.dtype), "Mean": mean.astype(x.dtype), "Variance": variance.astype(x.dtype)}


@kernel("self_dp_attention")
def self_dp_attention(k):
    x = k.x("X")
    if x.ndim != 5 or x.shape[2] != 3:
        raise ValueError(f"X must be [batch, seq, 3, heads, head_dim], got {list(x.shape)}")
    q, kk, v = x.astype(np.float64).transpose(2, 0, 3, 1, 4)
    return {"Out": _attention(q, kk, v, k.attr("alpha")).reshape(x.shape[:2] + x.shape[3:]).astype(x.dtype)}


# activation -> f(x, fuse_alpha), as the cuDNN / CUTLASS epilogue of that name
CONV_ACTIVATE = {
    "identity": lambda x, a: x, "relu": lambda x, a: np.maximum(x, 0), "relu6": lambda x, a: np.clip(x, 0, 6),
    "sigmoid": lambda x, a: sigmoid(x), "tanh": lambda x, a: np.tanh(x), "swish": lambda x, a: x * sigmoid(x),
    "leaky_relu": lambda x, a: np.where(x > 0, x, a * x),
}


@kernel("fused_conv2d_add_act")
def fused_conv2d_add_act(k):
    out = KERNELS["conv2d"](k)["Output"].astype(np.float64)
    channel_axis = -1 if k.attr("data_format") == "NHWC" else 1
    if (bias := k.optional("Bias")) is not None:
        if bias.size != out.shape[channel_axis]:
            raise ValueError(f"Bias has {bias.size} values for {out.shape[channel_axis]} output channels")
        shape = [1] * out.ndim
        shape[channel_axis] = -1
        out = out + bias.reshape(shape)
    if (residual := k.optional("ResidualData")) is not None:
        if residual.shape != out.shape:
            raise ValueError(f"ResidualData {list(residual.shape)} must have the output's shape {list(out.shape)}")
        out = out + residual
    name = k.attr("activation")
    if name not in CONV_ACTIVATE:
        raise ValueError(f"activation {name!r} is not one of {list(CONV_ACTIVATE)}")
    out = CONV_ACTIVATE[name](out, k.attr("fuse_alpha")).astype(k.x("Input").dtype)
    split = k.attr("split_channels")
    if not split or not k.wants("Outputs"):
        return {"Output": out}
    if sum(split) != out.shape[channel_axis]:
        raise ValueError(f"split_channels {split} must add up to the {out.shape[channel_axis]} output channels")
    return {"Output": out, "Outputs": np.split(out, np.cumsum(split)[:-1], axis=channel_axis)}


@kernel("fusion_transpose_flatten_concat")
def fusion_transpose_flatten_concat(k):
    axes, flatten, concat = k.attr("trans_axis"), k.attr("flatten_axis"), k.attr("concat_axis")
    flat = []
    for i, x in enumerate(k.xs("X")):
        if sorted(axes) != list(range(x.ndim)) or not 0 < flatten < x.ndim:
            raise ValueError(f"X[{i}] {list(x.shape)}: trans_axis {axes} must permute its dims and flatten_axis "
                             f"{flatten} fall inside them")
        moved = x.transpose(axes)
        flat.append(moved.reshape(int(np.prod(moved.shape[:flatten])), -1))
    return {"Out": np.concatenate(flat, axis=concat)}


@kernel("yolo_box_head")
def yolo_box_head(k):
    x, anchors, classes = k.x("X"), len(k.attr("anchors")) // 2, k.attr("class_num")
    if x.ndim != 4 or x.shape[1] != anchors * (5 + classes):
        raise ValueError(f"X {list(x.shape)} must be [N, {anchors * (5 + classes)}, H, W]")
    blocks = x.astype(np.float64).reshape(x.shape[0], anchors, 5 + classes, *x.shape[2:])
    out = sigmoid(blocks)
    out[:, :, 2:4] = np.exp(blocks[:, :, 2:4])   # w and h
    return {"Out": out.reshape(x.shape).astype(x.dtype)}


@kernel("fusion_group")
def fusion_group(k):
    raise ValueError(f"fusion_group runs the CUDA function {k.attr('func_name')!r} that Paddle's fusion_group_pass "
                     "generates at run time; the program does not hold its code, so gradc cannot run it")
