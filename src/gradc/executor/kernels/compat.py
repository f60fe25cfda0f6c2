"""Kernels of gradc.ops.compat. max/min_with_index give the first extreme's index along dim (as argmax / argmin);
slogdet_v2 computes in float64 and gives sign 0 and log|det| -inf for a singular matrix, whose gradient is NaN
(log|det| has no derivative there)."""

from __future__ import annotations

import numpy as np

from . import kernel
from .linalg import f64
from .matmul import t
from .nn import padding_of


def _along(k) -> tuple[int, bool]:
    """(dim, keepdim): dim from DimTensor when given, else the attribute."""
    dim = int(np.asarray(k.x("DimTensor")).reshape(-1)[0]) if k.has("DimTensor") else int(k.attr("dim"))
    return dim % max(k.x("x").ndim, 1), bool(k.attr("keepdim"))


@kernel("max_with_index", "min_with_index")
def with_index(k):
    x = k.x("x")
    axis, keep = _along(k)
    if x.shape[axis] == 0:
        raise ValueError(f"{k.op.type} of an empty dim {axis} of x {list(x.shape)}")
    indices = (np.argmax if k.op.type == "max_with_index" else np.argmin)(x, axis=axis, keepdims=True)
    values = np.take_along_axis(x, indices, axis)
    if not keep:
        values, indices = values.squeeze(axis), indices.squeeze(axis)
    return {"values": values, "indices": indices.astype(np.int64)}


@kernel("max_with_index_grad", "min_with_index_grad")
def with_index_grad(k):
    x, dvalues, indices = k.x("x"), k.x("values@GRAD"), k.x("indices").astype(np.int64)
    axis, keep = _along(k)
    if not keep:
        dvalues, indices = np.expand_dims(dvalues, axis), np.expand_dims(indices, axis)
    dx = np.zeros(x.shape, dvalues.dtype)
    np.put_along_axis(dx, indices, dvalues, axis)
    return {"x@GRAD": dx}


@kernel("slogdet_v2")
def slogdet_v2(k):
    x = k.x("x")
    sign, logdet = np.linalg.slogdet(f64(k, "x"))
    return {"sign": np.asarray(sign, x.dtype), "logdet": np.asarray(logdet, x.dtype)}


@kernel("slogdet_v2_grad")
def slogdet_v2_grad(k):
    x, a = k.x("x"), f64(k, "x")
    singular = (np.asarray(k.x("sign")) == 0)[..., None, None]
    dlog = f64(k, "logdet@GRAD")[..., None, None]
    grad = np.where(singular, np.nan, dlog * t(np.linalg.inv(np.where(singular, np.eye(a.shape[-1]), a))))
    return {"x@GRAD": grad.astype(x.dtype)}


def _ids(k, rows: int) -> np.ndarray:
    ids = k.x("x").astype(np.int64)
    bad = ((ids < 0) | (ids >= rows)) & ~padding_of(ids, k.attr("padding_idx"))
    if bad.any():
        raise ValueError(f"id {ids[bad][0]} is out of range for a table of {rows} rows")
    return ids


@kernel("embedding_with_scaled_gradient")
def embedding_with_scaled_gradient(k):
    weight = k.x("weight")
    ids = _ids(k, weight.shape[0])
    padding = padding_of(ids, k.attr("padding_idx"))
    out = weight[np.where(padding, 0, ids)]
    out[padding] = 0
    return {"out": out}


@kernel("embedding_with_scaled_gradient_grad")
def embedding_with_scaled_gradient_grad(k):
    weight, dout = k.x("weight"), k.x("out@GRAD")
    ids = _ids(k, weight.shape[0]).reshape(-1)
    keep = ~padding_of(ids, k.attr("padding_idx"))
    dweight = np.zeros(weight.shape, dout.dtype)
    np.add.at(dweight, ids[keep], dout.reshape(ids.size, weight.shape[1])[keep])
    counts = np.bincount(ids[keep], minlength=weight.shape[0])
    return {"weight@GRAD": dweight / np.maximum(counts, 1).astype(dout.dtype)[:, None]}


@kernel("enable_check_model_nan_inf", "disable_check_model_nan_inf")
def check_model_nan_inf(k):
    return {"out": k.x("x")}


@kernel("enable_check_model_nan_inf_grad", "disable_check_model_nan_inf_grad")
def check_model_nan_inf_grad(k):
    return {"x@GRAD": k.x("out@GRAD")}
