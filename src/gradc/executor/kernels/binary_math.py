"""Kernels of gradc.ops.binary_math: one row per op, forward and grad side by side."""

from __future__ import annotations

import numpy as np

from ...ops.rearrange import diagonal_length
from . import kernel
from .broadcast import unbroadcast
from .math import binary, binary_grad


def _binary(name: str, x: str, y: str, forward, dx, dy, out: str = "Out") -> None:
    """math.binary's kernels of out = forward(x, y) and its grad, numpy's broadcasting (no axis attribute); a dx or
    dy of None: flat in that operand."""
    binary(name, forward, x, y, out, by_axis=False)
    binary_grad(name + "_grad", dx, dy, x, y, out, by_axis=False)


def _atan2(x1, x2):
    """Integers are computed (and returned) in float64, as Paddle does; floats keep their dtype."""
    if x1.dtype.kind in "iub":
        return np.arctan2(x1.astype(np.float64), x2.astype(np.float64))
    return np.arctan2(x1, x2)


def _over_norm(v, x1, x2, d):
    """v dOut / (x1^2 + x2^2) as (v / h) (dOut / h), h = hypot(x1, x2): x1^2 overflows in float32 past 1.8e19
    (and underflows below 1e-19). NaN at (0, 0), where atan2 has no derivative, as Paddle's kernel gives."""
    norm = np.hypot(x1, x2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (v / norm) * (d / norm)


_binary("atan2", "X1", "X2", _atan2, lambda x1, x2, d: _over_norm(x2, x1, x2, d),
        lambda x1, x2, d: _over_norm(-x1, x1, x2, d))


# Paddle's kernels: fmax's dX = dOut where x >= y or y is NaN, dY = dOut elsewhere (fmin: x <= y)
_binary("elementwise_fmax", "X", "Y", np.fmax, lambda x, y, d: d * ((x >= y) | np.isnan(y)),
        lambda x, y, d: d * ~((x >= y) | np.isnan(y)))
_binary("elementwise_fmin", "X", "Y", np.fmin, lambda x, y, d: d * ((x <= y) | np.isnan(y)),
        lambda x, y, d: d * ~((x <= y) | np.isnan(y)))
# y where x == 0, else 1 where x > 0, else 0 (a NaN x gives 0, as Paddle's kernel: not numpy's NaN)
_binary("elementwise_heaviside", "X", "Y", lambda x, y: np.where(x == 0, y, x > 0).astype(np.result_type(x, y)),
        None, lambda x, y, d: d * (x == 0))


def _copysign(x, y):
    """Integers through float64 and back, as Paddle's kernel."""
    return np.copysign(x, y).astype(np.result_type(x, y), copy=False)


def _copysign_dx(x, y, d):
    """dOut copysign(x, y) / x, and 0 at x = 0 (Paddle's formula: NaN at an infinite x, like its kernel)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(x == 0, 0, d * (np.copysign(x, y) / x)).astype(d.dtype, copy=False)


_binary("copysign", "x", "y", _copysign, _copysign_dx, None, out="out")


@kernel("lerp")
def lerp(k):
    x, y, w = k.x("X"), k.x("Y"), k.x("Weight")
    return {"Out": x + w * (y - x)}


@kernel("lerp_grad", shape_only=("X", "Y", "Out"))
def lerp_grad(k):
    w, dout = k.x("Weight"), k.x("Out@GRAD")
    return k.grads({"X@GRAD": lambda: unbroadcast(np.broadcast_to(dout * (1 - w), dout.shape), k.x("X").shape),
                    "Y@GRAD": lambda: unbroadcast(np.broadcast_to(dout * w, dout.shape), k.x("Y").shape)})


@kernel("masked_fill")
def masked_fill(k):
    x = k.x("x")
    return {"out": np.where(k.x("mask"), k.x("value").astype(x.dtype, copy=False), x)}


@kernel("masked_fill_grad", shape_only=("x", "value"))
def masked_fill_grad(k):
    mask, dout = k.x("mask"), k.x("out@GRAD")
    zero = dout.dtype.type(0)
    return k.grads({"x@GRAD": lambda: unbroadcast(np.where(mask, zero, dout), k.x("x").shape),
                    "value@GRAD": lambda: unbroadcast(np.where(mask, dout, zero), k.x("value").shape)})


kernel("isnan_v2")(lambda k: {"Out": np.isnan(k.x("X"))})
kernel("isinf_v2")(lambda k: {"Out": np.isinf(k.x("X"))})
kernel("isfinite_v2")(lambda k: {"Out": np.isfinite(k.x("X"))})


def _tolerance(k, slot: str, attr: str) -> float:
    tensor = k.optional(slot)
    return float(tensor.reshape(-1)[0]) if tensor is not None else float(k.attr(attr))


def _isclose(k):
    """|a - b| <= atol + rtol |b| computed in float64, or within 1e-15 of it (Paddle's slack); NaNs are close to
    each other only with equal_nan. Infinities are close only to themselves: Paddle 3.3.1 also calls 1 close to inf
    and inf close to -inf (inf <= inf), which gradc does not copy."""
    a, b = k.x("Input").astype(np.float64), k.x("Other").astype(np.float64)
    rtol, atol = _tolerance(k, "Rtol", "rtol"), _tolerance(k, "Atol", "atol")
    with np.errstate(invalid="ignore"):
        distance, allowed = np.abs(a - b), atol + rtol * np.abs(b)
        finite_close = (distance <= allowed) | (np.abs(distance - allowed) <= 1e-15)
    close = (a == b) | (np.isfinite(a) & np.isfinite(b) & finite_close)
    if k.attr("equal_nan"):
        close |= np.isnan(a) & np.isnan(b)
    return close


kernel("isclose")(lambda k: {"Out": _isclose(k)})
kernel("allclose")(lambda k: {"Out": np.array(_isclose(k).all())})


@kernel("conj")
def conj(k):
    x = k.x("X")
    return {"Out": np.conj(x) if x.dtype.kind == "c" else x.copy()}


def _diagonal_of(a: np.ndarray, k):
    """A writable view of ``a`` with the plane (dim1, dim2) last, and the indices of its diagonal at ``offset``."""
    plane = np.moveaxis(a, (k.attr("dim1") % a.ndim, k.attr("dim2") % a.ndim), (-2, -1))
    offset = k.attr("offset")
    steps = np.arange(diagonal_length(*plane.shape[-2:], offset))
    return plane, steps + max(0, -offset), steps + max(0, offset)


@kernel("fill_diagonal_tensor")
def fill_diagonal_tensor(k):
    """Y holds the diagonal as [the other dims, length], which Paddle's kernel reads flattened to 2-D (so [1, length]
    for a matrix)."""
    out = k.x("X").copy()
    plane, rows, cols = _diagonal_of(out, k)
    y, shape = k.x("Y"), plane.shape[:-2] + (len(rows),)
    if y.size != np.prod(shape) or y.shape[-1:] != shape[-1:]:
        raise ValueError(f"Y must be shaped like the diagonal it replaces, {list(shape)}, got {list(y.shape)}")
    plane[..., rows, cols] = y.reshape(shape)
    return {"Out": out}


@kernel("fill_diagonal_tensor_grad")
def fill_diagonal_tensor_grad(k):
    dx = k.x("Out@GRAD").copy()
    plane, rows, cols = _diagonal_of(dx, k)
    plane[..., rows, cols] = 0
    return {"X@GRAD": dx}
