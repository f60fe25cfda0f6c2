"""Kernels of gradc.ops.extra_math: one row per op, forward and grad side by side. gammaincc's Q(a, y), a = the op's
x, and its slope are gradc.executor.kernels.incomplete_gamma's."""

from __future__ import annotations

import numpy as np

from ...ops.extra_math import angular_margin
from . import kernel
from .activation import sigmoid
from .broadcast import unbroadcast
from .incomplete_gamma import gammaincc, gammaincc_slope
from .special_math import digamma, elementwise, lgamma

elementwise("gammaln", lambda x, k: lgamma(x), lambda x, k: digamma(x), "x", lowercase=True)

@kernel("gammaincc")
def gammaincc_kernel(k):
    x, y = k.x("x"), k.x("y")
    return {"out": gammaincc(x, y).reshape(x.shape).astype(x.dtype, copy=False)}


@kernel("gammaincc_grad")
def gammaincc_grad(k):
    x, y, dout = k.x("x"), k.x("y"), k.x("out@GRAD")
    slope = gammaincc_slope(x.astype(np.float64), y.astype(np.float64))
    return {"y@GRAD": (dout * slope).astype(y.dtype, copy=False)}


@kernel("nextafter")
def nextafter(k):
    return {"out": np.nextafter(k.x("x"), k.x("y"))}


def _row_picks(k, slot: str, rows: int, count: int, rows_of: str, outside: str) -> np.ndarray:
    """``slot`` as a vector of one index in [0, count) per row; ``rows_of`` and ``outside`` word the errors."""
    picks = k.x(slot).reshape(-1)
    if picks.size != rows:
        raise ValueError(f"{slot} has {picks.size} indices for the {rows} rows of {rows_of}")
    bad = (picks < 0) | (picks >= count)
    if bad.any():
        raise ValueError(f"{slot} {picks[bad][0]} (row {np.flatnonzero(bad)[0]}) {outside}")
    return picks


def _ids(k, xs) -> np.ndarray:
    return _row_picks(k, "Ids", xs[0].shape[0], len(xs), "X's tensors", f"picks no tensor of X, which holds {len(xs)}")


@kernel("multiplex")
def multiplex(k):
    xs = k.xs("X")
    if any(x.shape != xs[0].shape for x in xs):
        raise ValueError(f"the tensors of X must have one shape, got {[x.shape for x in xs]}")
    ids = _ids(k, xs)
    return {"Out": np.stack(xs)[ids, np.arange(ids.size)]}


@kernel("multiplex_grad", shape_only=("X",))
def multiplex_grad(k):
    xs, dout = k.xs("X"), k.x("Out@GRAD")
    ids = _ids(k, xs)
    return {"X@GRAD": [np.where((ids == i).reshape(-1, *[1] * (dout.ndim - 1)), dout, 0).astype(dout.dtype)
                       for i in range(len(xs))]}


@kernel("reduce_as", shape_only=("target",))
def reduce_as(k):
    x, target = k.x("x"), k.x("target")
    if x.dtype in (np.bool_, np.int32):   # summed into int64, as Paddle's sum
        x = x.astype(np.int64)
    return {"out": np.ascontiguousarray(unbroadcast(x, target.shape))}


@kernel("reduce_as_grad", shape_only=("x", "target"))
def reduce_as_grad(k):
    x, dout = k.x("x"), k.x("out@GRAD")
    return {"x@GRAD": np.broadcast_to(dout, x.shape).copy()}


@kernel("is_empty", shape_only=("X",))
def is_empty(k):
    return {"Out": np.array(k.x("X").size == 0)}


@kernel("equal_all")
def equal_all(k):
    x, y = k.x("X"), k.x("Y")
    return {"Out": np.array(x.shape == y.shape and bool(np.all(x == y)))}


def _halves(k):
    """(x, y), or x's two halves along its last axis when y is absent."""
    x, y = k.x("x"), k.optional("y")
    if y is not None:
        if y.shape != x.shape:
            raise ValueError(f"x {x.shape} and y {y.shape} must have one shape")
        return x, y
    half = x.shape[-1] // 2
    if x.ndim == 0 or x.shape[-1] % 2:
        raise ValueError(f"without y, x's last dim must be even, got x {x.shape}")
    return x[..., :half], x[..., half:]


@kernel("swiglu")
def swiglu(k):
    a, b = _halves(k)
    return {"out": a * sigmoid(a) * b}


@kernel("swiglu_grad")
def swiglu_grad(k):
    a, b = _halves(k)
    dout = k.x("out@GRAD")
    gate = sigmoid(a)
    da = dout * b * gate * (1 + a * (1 - gate))
    db = dout * a * gate
    if k.optional("y") is None:
        return {"x@GRAD": np.concatenate([da, db], axis=-1)}
    return k.grads({"x@GRAD": lambda: da, "y@GRAD": lambda: db})


def _norm_axis(k, x) -> int:
    axis = k.attr("axis")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"attribute axis={axis} is out of range for X {x.shape}")
    return axis % x.ndim


@kernel("norm")
def norm(k):
    x = k.x("X")
    axis = _norm_axis(k, x)
    wide = x.astype(np.float64)
    size = np.sqrt(np.square(wide).sum(axis=axis, keepdims=True) + k.attr("epsilon"))
    return {"Out": (wide / size).astype(x.dtype), "Norm": size.astype(x.dtype)}


@kernel("norm_grad")
def norm_grad(k):
    x, size, dout = k.x("X"), k.x("Norm").astype(np.float64), k.x("Out@GRAD")
    out = x.astype(np.float64) / size
    along = (dout * out).sum(axis=_norm_axis(k, x), keepdims=True)
    return {"X@GRAD": ((dout - out * along) / size).astype(x.dtype)}


def _angular(k) -> bool:
    return angular_margin(k.attr("margin1"), k.attr("margin2"))


def _labels(k, logits) -> np.ndarray:
    rows, classes = logits.shape
    return _row_picks(k, "Label", rows, classes, "Logits", f"is not a class of Logits' {classes}")


@kernel("margin_cross_entropy")
def margin_cross_entropy(k):
    logits = k.x("Logits")
    label = _labels(k, logits)
    rows = np.arange(label.size)
    z = logits.astype(np.float64)
    target = z[rows, label]
    if _angular(k):
        with np.errstate(invalid="ignore"):   # a cosine outside [-1, 1] gives NaN, as Paddle's acos
            target = np.cos(k.attr("margin1") * np.arccos(target) + k.attr("margin2"))
    z[rows, label] = target - k.attr("margin3")
    z *= k.attr("scale")
    shifted = z - z.max(axis=1, keepdims=True)
    log_total = np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = log_total[:, 0] - shifted[rows, label]
    return {"Softmax": np.exp(shifted - log_total).astype(logits.dtype), "Loss": loss[:, None].astype(logits.dtype)}


@kernel("margin_cross_entropy_grad")
def margin_cross_entropy_grad(k):
    logits, softmax, dloss = k.x("Logits"), k.x("Softmax"), k.x("Loss@GRAD")
    label = _labels(k, logits)
    rows = np.arange(label.size)
    grad = softmax.astype(np.float64)
    grad[rows, label] -= 1
    grad *= dloss.reshape(-1, 1) * k.attr("scale")
    if _angular(k):
        m1, m2, c = k.attr("margin1"), k.attr("margin2"), logits[rows, label].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            grad[rows, label] *= m1 * np.sin(m1 * np.arccos(c) + m2) / np.sqrt(1 - c * c)
    return {"Logits@GRAD": grad.astype(logits.dtype)}

