"""Kernels of gradc.ops.legacy_nn. The v1 resizes run gradc's v2 resize kernels with the v1 plan."""

from __future__ import annotations

import numpy as np

from ...ops import legacy_nn as ops
from . import kernel
from . import onednn_int8 as int8
from .interp import planned_by, resize, resize_grad

_v1_plan = planned_by(ops.v1_plan)


@kernel(*ops.V1_RESIZES)
def v1_resize(k):
    return resize(k, _v1_plan)


@kernel(*(name + "_grad" for name in ops.V1_RESIZES))
def v1_resize_grad(k):
    return resize_grad(k, _v1_plan)


@kernel("fc")
def fc(k):
    x, w, bias = k.x("Input"), k.x("W"), k.optional("Bias")
    cols = k.attr("in_num_col_dims")
    if not 1 <= cols < x.ndim:
        raise ValueError(f"in_num_col_dims {cols} must be in [1, {x.ndim}) for Input of rank {x.ndim}")
    rows, n = ops.fc_weight_dims(list(w.shape), k.attr("padding_weights"))
    flat = x.reshape(int(np.prod(x.shape[:cols])), -1)
    if w.ndim != 2 or flat.shape[1] != rows or n < 1:
        raise ValueError(f"Input flattens to {list(flat.shape)} at in_num_col_dims {cols}, which W {list(w.shape)} "
                         f"(padding_weights {k.attr('padding_weights')}) cannot multiply")
    quantized = int8.quantized(x)
    out = _int8_inner_product(k, flat, w[:rows, :n]) if quantized else flat @ w[:rows, :n]
    if bias is not None:
        if bias.size != n:
            raise ValueError(f"Bias has {bias.size} values for {n} outputs")
        out = out + bias.reshape(n).astype(out.dtype, copy=False)
    if k.attr("activation_type") == "relu":
        out = np.maximum(out, 0)
    if quantized:
        out = _int8_fc_output(k, out)
    return {"Out": out.astype(out.dtype if quantized else x.dtype, copy=False).reshape(*x.shape[:cols], n)}


def _int8_inner_product(k, flat, w):
    """oneDNN's int8 inner product of a quantize op's int8 / uint8 Input: float32, before Bias
    (gradc.executor.kernels.onednn_int8)."""
    scales = int8.weight_scales(k.attr("Scale_weights"), w.shape[1])
    acc = int8.inner_product(flat, int8.quantized_weights(w, scales, 1))
    return int8.dequantized(acc, k.attr("Scale_in"), scales, 1)


def _int8_fc_output(k, out):
    """force_fp32_output keeps float32; else round(out * Scale_out) saturated, uint8 after a relu, else int8."""
    if k.attr("force_fp32_output"):
        return out
    return int8.requantized(out, k.attr("Scale_out"), k.attr("activation_type"))


def _hinge_margin(k):
    """(1 - Logits (2 Labels - 1), the sign 2 Labels - 1)."""
    logits, labels = k.x("Logits"), k.x("Labels")
    if logits.shape != labels.shape:
        raise ValueError(f"Labels {list(labels.shape)} must have Logits' shape {list(logits.shape)}")
    sign = 2 * labels.astype(logits.dtype) - 1
    return 1 - logits * sign, sign


@kernel("hinge_loss")
def hinge_loss(k):
    margin, _ = _hinge_margin(k)
    return {"Loss": np.maximum(margin, 0)}


@kernel("hinge_loss_grad")
def hinge_loss_grad(k):
    """Paddle's subgradient: 0 at the kink (margin 0) as past it."""
    margin, sign = _hinge_margin(k)
    return {"Logits@GRAD": np.where(margin > 0, -sign, 0).astype(margin.dtype) * k.x("Loss@GRAD")}


@kernel("l1_norm")
def l1_norm(k):
    x = k.x("X")
    return {"Out": np.asarray(np.abs(x).sum(dtype=np.float64), x.dtype)}


@kernel("l1_norm_grad")
def l1_norm_grad(k):
    x = k.x("X")
    return {"X@GRAD": np.sign(x) * k.x("Out@GRAD").reshape(())}
