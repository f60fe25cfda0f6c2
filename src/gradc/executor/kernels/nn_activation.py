"""Kernels of gradc.ops.nn_activation: prelu, maxout, rrelu, gumbel_softmax, fused_softmax_mask (and its upper-triangle
form)."""

from __future__ import annotations

import math

import numpy as np

from ...shapes import normalize_axis
from .. import paddle_random, randomness
from . import kernel
from .activation import softmax


# ---------------------------------------------------------------- prelu
def _channel_shape(k, x) -> list[int]:
    shape = [1] * x.ndim
    shape[1 if k.attr("data_format") == "NCHW" else x.ndim - 1] = -1
    return shape


def _slopes(k, x, alpha):
    """Alpha laid out to broadcast against X. In element mode a sample's slopes are Alpha's first
    prod(X.shape[1:]) values, whatever Alpha's first dim (as Paddle indexes them)."""
    mode = k.attr("mode")
    if mode == "all":
        return alpha.reshape(())
    if mode == "channel":
        return alpha.reshape(_channel_shape(k, x))
    return alpha.reshape(-1)[:math.prod(x.shape[1:])].reshape((1,) + x.shape[1:])


def _alpha_grad(k, x, alpha, d):
    """d(Out)/d(Alpha): x * dOut where x <= 0, summed over the elements each slope multiplies."""
    part = np.where(x > 0, 0, x * d)
    mode = k.attr("mode")
    if mode == "all":
        return part.sum().reshape(alpha.shape)
    if mode == "channel":
        axis = 1 if k.attr("data_format") == "NCHW" else x.ndim - 1
        return part.sum(axis=tuple(i for i in range(x.ndim) if i != axis)).reshape(alpha.shape)
    per_sample = part.sum(axis=0).reshape(-1)
    return np.concatenate([per_sample, np.zeros(alpha.size - per_sample.size, alpha.dtype)]).reshape(alpha.shape)


@kernel("prelu")
def prelu(k):
    x = k.x("X")
    return {"Out": np.where(x > 0, x, _slopes(k, x, k.x("Alpha")) * x)}


@kernel("prelu_grad")
def prelu_grad(k):
    x, alpha, d = k.x("X"), k.x("Alpha"), k.x("Out@GRAD")
    return k.grads({"X@GRAD": lambda: np.where(x > 0, d, _slopes(k, x, alpha) * d),
                    "Alpha@GRAD": lambda: _alpha_grad(k, x, alpha, d)})


# ---------------------------------------------------------------- maxout
def _channel_axis(k, x) -> int:
    return normalize_axis(k.attr("axis"), x.ndim)


def _grouped(k, x):
    """X as [N, C / groups, groups, spatial...]: the channel axis moved to 1 and split into its groups."""
    channels_first = np.moveaxis(x, _channel_axis(k, x), 1)
    return channels_first.reshape(x.shape[0], -1, k.attr("groups"), *channels_first.shape[2:])


@kernel("maxout")
def maxout(k):
    x = k.x("X")
    return {"Out": np.moveaxis(_grouped(k, x).max(axis=2), 1, _channel_axis(k, x))}


@kernel("maxout_grad")
def maxout_grad(k):
    x = k.x("X")
    grouped, axis = _grouped(k, x), _channel_axis(k, x)
    first_max = np.zeros(grouped.shape, bool)
    np.put_along_axis(first_max, np.expand_dims(grouped.argmax(axis=2), 2), True, axis=2)
    dout = np.expand_dims(np.moveaxis(k.x("Out@GRAD"), axis, 1), 2)
    dx = np.where(first_max, dout, 0).reshape(x.shape[0], -1, *grouped.shape[3:])
    return {"X@GRAD": np.moveaxis(dx, 1, axis)}


# ---------------------------------------------------------------- rrelu
@kernel("rrelu")
def rrelu(k):
    x, lower, upper = k.x("X"), k.attr("lower"), k.attr("upper")
    noise = np.ones_like(x)
    if k.attr("is_test"):
        noise[x < 0] = (np.float32(lower) + np.float32(upper)) / np.float32(2)
    else:   # Paddle's: a float uniform in [lower, upper) a negative element, in order
        noise[x < 0] = paddle_random.uniform(randomness.engine(), int((x < 0).sum()), lower, upper, np.float32)
    return {"Out": x * noise, "Noise": noise}


kernel("rrelu_grad")(lambda k: {"X@GRAD": k.x("Out@GRAD") * k.x("Noise")})


# ---------------------------------------------------------------- gumbel_softmax
def _along_axis(k, a):
    """``a`` with at least one dim (a 0-d X is one class) and the softmax axis as an index."""
    a = a.reshape(a.shape or (1,))
    return a, normalize_axis(k.attr("axis"), a.ndim)


@kernel("gumbel_softmax")
def gumbel_softmax(k):
    x = k.x("X")
    logits, axis = _along_axis(k, x)
    wide = paddle_random.distribution_dtype(x.dtype)   # Paddle's noise: a uniform in [1e-5, 1) an element, in order
    uniform = paddle_random.uniform(randomness.engine(), logits.size, 0.00001, 1.0, wide).reshape(logits.shape)
    soft = softmax((logits - np.log(-np.log(uniform)).astype(x.dtype)) / np.asarray(k.attr("temperature"), x.dtype),
                   axis)
    if k.attr("hard"):
        hard = np.zeros_like(soft)
        np.put_along_axis(hard, np.expand_dims(soft.argmax(axis), axis), 1, axis)
        soft = hard
    return {"Out": soft.reshape(x.shape)}


@kernel("gumbel_softmax_grad")
def gumbel_softmax_grad(k):
    """The softmax's derivative through (x + g) / temperature; a one-hot Out (hard) gives 0."""
    (out, axis), d = _along_axis(k, k.x("Out")), k.x("Out@GRAD")
    d = d.reshape(out.shape)
    dx = out * (d - (d * out).sum(axis=axis, keepdims=True)) / np.asarray(k.attr("temperature"), d.dtype)
    return {"X@GRAD": dx.reshape(k.x("Out").shape)}


# ---------------------------------------------------------------- fused_softmax_mask
@kernel("fused_softmax_mask")
def fused_softmax_mask(k):
    scores = k.x("X") + k.x("Mask")   # Mask [batch, 1, rows, cols] broadcast over the heads
    return {"Out": softmax(scores, -1) if scores.size else scores}


def _softmax_grad(out, d):
    return out * (d - (d * out).sum(axis=-1, keepdims=True))


kernel("fused_softmax_mask_grad")(lambda k: {"X@GRAD": _softmax_grad(k.x("Softmax"), k.x("Out@GRAD"))})
kernel("fused_softmax_mask_upper_triangle_grad")(lambda k: {"X@GRAD": _softmax_grad(k.x("Out"), k.x("Out@GRAD"))})


@kernel("fused_softmax_mask_upper_triangle")
def fused_softmax_mask_upper_triangle(k):
    x = k.x("X")
    rows = x.shape[-1]
    later = np.triu(np.ones((rows, rows), bool), 1)   # column j > row i: masked
    if not x.size:
        return {"Out": x}
    out = softmax(np.where(later, -np.inf, x), -1)
    return {"Out": np.where(later, 0, out).astype(x.dtype)}
