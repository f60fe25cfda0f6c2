"""Kernels of gradc.ops.fused_grad_steps: the fused steps of large-model training, and apply_per_channel_scale."""

from __future__ import annotations

import numpy as np

from . import kernel


@kernel("fused_linear_param_grad_add")
def fused_linear_param_grad_add(k):
    x, dout = k.x("x"), k.x("dout")
    acc = np.float32 if k.attr("multi_precision") and x.dtype == np.float16 else x.dtype
    rows, grads = x.reshape(-1, x.shape[-1]).astype(np.float64), dout.reshape(-1, dout.shape[-1]).astype(np.float64)
    dweight, dbias = k.optional("dweight"), k.optional("dbias")
    return {"dweight_out": (rows.T @ grads + (0 if dweight is None else dweight)).astype(acc),   # has_bias unread
            "dbias_out": (grads.sum(0) + (0 if dbias is None else dbias)).astype(acc)}


@kernel("cross_entropy_with_softmax_bwd_w_downcast")
def cross_entropy_with_softmax_bwd_w_downcast(k):
    softmax, label = k.x("softmax").astype(np.float32), k.x("label").astype(np.int64)
    classes = softmax.shape[-1]
    ignored = label == -100
    if ((label < 0) & ~ignored).any() or (label >= classes).any():
        raise ValueError(f"label holds values outside [0, {classes}) (and the ignored -100)")
    onehot = np.arange(classes) == np.where(ignored, -1, label)
    grad = (softmax - onehot) * k.x("loss_grad").astype(np.float32)
    return {"input_grad": np.where(ignored, 0, grad).astype(np.float32)}   # the store rounds to bfloat16


@kernel("embedding_grad_add_to")
def embedding_grad_add_to(k):
    table, ids, grad = k.x("main_grad_"), k.x("token_indices").reshape(-1).astype(np.int64), k.x("out_grad")
    if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
        raise ValueError(f"token_indices holds rows outside main_grad_'s [0, {table.shape[0]})")
    out = table.astype(np.float64)
    np.add.at(out, ids, grad.reshape(ids.size, -1).astype(np.float64))
    return {"main_grad_out": out.astype(table.dtype)}


@kernel("apply_per_channel_scale")
def apply_per_channel_scale(k):
    x = k.x("x")
    return {"out": (x * k.x("scales")).astype(x.dtype)}
