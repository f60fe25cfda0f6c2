"""Kernels of gradc.ops.math."""

from __future__ import annotations

import math

import numpy as np

from ...shapes import normalize_axis
from ..tensor_array import TensorArray
from . import kernel
from .activation import unary
from .broadcast import align, reduce_to, unbroadcast


def _elementwise(k):
    x, y = k.x("X"), k.x("Y")
    xa, ya = align(x, y, k.attr("axis"))
    return x, y, xa, ya


def _binary(name, fn):
    kernel(name)(lambda k: {"Out": fn(*_elementwise(k)[2:])})


@kernel("elementwise_add")
def elementwise_add(k):
    x, y = k.x("X"), k.x("Y")
    if x.ndim != y.ndim:
        x, y = align(x, y, k.attr("axis"))
    return {"Out": np.add(x, y)}


_binary("elementwise_sub", np.subtract)
_binary("elementwise_mul", np.multiply)


def _integer_safe(fn):
    """``fn`` for floats; for integers after a check for zero divisors, which Paddle reports too."""
    def apply(x, y):
        if np.issubdtype(np.result_type(x, y), np.integer) and not np.all(y):
            raise ValueError("integer division by zero")
        return fn(x, y)
    return apply


def _divide(x, y):
    """Paddle's division: true division of floats, integers rounded toward zero (as C does)."""
    if not np.issubdtype(np.result_type(x, y), np.integer):
        return np.divide(x, y)
    quotient = np.floor_divide(x, y)
    return quotient + ((quotient < 0) & (quotient * y != x))


_binary("elementwise_div", _integer_safe(_divide))
_binary("elementwise_max", np.maximum)
_binary("elementwise_min", np.minimum)
_binary("elementwise_pow", np.power)
_binary("elementwise_mod", _integer_safe(np.mod))                # the sign of Y, as Python's %
_binary("elementwise_floordiv", _integer_safe(np.floor_divide))  # rounds toward -inf


def _binary_grad(name, dx, dy):
    """dx(xa, ya, dout) and dy(...) give the broadcast grads; they are summed back to X and Y."""

    @kernel(name)
    def grad(k):
        x, y, xa, ya = _elementwise(k)
        dout = k.x("Out@GRAD")
        return k.grads({"X@GRAD": lambda: reduce_to(np.broadcast_to(dx(xa, ya, dout), dout.shape), x, xa),
                        "Y@GRAD": lambda: reduce_to(np.broadcast_to(dy(xa, ya, dout), dout.shape), y, ya)})


@kernel("elementwise_add_grad", shape_only=("X", "Y"))
def elementwise_add_grad(k):
    """dX and dY are dOut summed back to each operand's shape (a bias: over the batch)."""
    x, y, xa, ya = _elementwise(k)
    dout = k.x("Out@GRAD")
    return k.grads({"X@GRAD": lambda: dout if x.shape == dout.shape else reduce_to(dout, x, xa),
                    "Y@GRAD": lambda: dout if y.shape == dout.shape else reduce_to(dout, y, ya)})



_binary_grad("elementwise_sub_grad", lambda x, y, d: d, lambda x, y, d: -d)
_binary_grad("elementwise_mul_grad", lambda x, y, d: d * y, lambda x, y, d: d * x)
_binary_grad("elementwise_div_grad", lambda x, y, d: d / y, lambda x, y, d: -d * x / (y * y))
# Ties go to Y, as in Paddle's kernels.
_binary_grad("elementwise_max_grad", lambda x, y, d: d * (x > y), lambda x, y, d: d * (x <= y))
_binary_grad("elementwise_min_grad", lambda x, y, d: d * (x < y), lambda x, y, d: d * (x >= y))
# x mod y = x - y floor(x / y)
_binary_grad("remainder_grad", lambda x, y, d: d, lambda x, y, d: -d * np.floor_divide(x, y))
# d(x^y)/dy = x^y log x, whose limit at x = 0 is 0 (log(1) stands in there).
_binary_grad("elementwise_pow_grad", lambda x, y, d: d * y * np.power(x, y - 1),
             lambda x, y, d: d * np.power(x, y) * np.log(np.where(x == 0, 1, x)))


def as_matrix(a, axis: int):
    """``a`` as [prod(shape[:axis]), prod(shape[axis:])]: mul's flattening, one row per normalised slice."""
    return a.reshape(math.prod(a.shape[:axis]), -1)


@kernel("mul")
def mul(k):
    x, y = k.x("X"), k.x("Y")
    xn, yn = k.attr("x_num_col_dims"), k.attr("y_num_col_dims")
    if x.ndim == 2 and y.ndim == 2 and xn == yn == 1:   # already matrices (fc layers)
        return {"Out": x @ y}
    out = as_matrix(x, xn) @ as_matrix(y, yn)
    return {"Out": out.reshape(x.shape[:xn] + y.shape[yn:])}


@kernel("mul_grad")
def mul_grad(k):
    x, y, dout = k.x("X"), k.x("Y"), k.x("Out@GRAD")
    if x.ndim == 2 and y.ndim == 2 and dout.ndim == 2 and k.attr("x_num_col_dims") == k.attr("y_num_col_dims") == 1:
        return k.grads({"X@GRAD": lambda: dout @ y.T, "Y@GRAD": lambda: x.T @ dout})
    x2, y2 = as_matrix(x, k.attr("x_num_col_dims")), as_matrix(y, k.attr("y_num_col_dims"))
    d2 = dout.reshape(x2.shape[0], y2.shape[1])
    return k.grads({"X@GRAD": lambda: (d2 @ y2.T).reshape(x.shape), "Y@GRAD": lambda: (x2.T @ d2).reshape(y.shape)})


def _swap_last(a):
    return np.swapaxes(a, -1, -2)


def _operands(x, y, trans_x, trans_y):
    """X and Y as (batch..., m, n) operands: a 1-D X is a row and a 1-D Y a column (never transposed)."""
    xm = x[None, :] if x.ndim == 1 else (_swap_last(x) if trans_x else x)
    ym = y[:, None] if y.ndim == 1 else (_swap_last(y) if trans_y else y)
    return xm, ym


def _matmul(x, y, trans_x, trans_y):
    xm, ym = _operands(x, y, trans_x, trans_y)
    out = xm @ ym
    if x.ndim == 1:
        out = out[..., 0, :]
    if y.ndim == 1:
        out = out[..., 0]
    return out


def _matmul_grads(k, x, y, dout, trans_x, trans_y):
    xm, ym = _operands(x, y, trans_x, trans_y)
    if y.ndim == 1:  # restore the dropped dims: Y's column first, so a 0-d dout works too
        dout = dout[..., None]
    if x.ndim == 1:
        dout = np.expand_dims(dout, -2)

    def dx():
        dxm = dout @ _swap_last(ym)
        return _sum_batch(dxm if x.ndim == 1 or not trans_x else _swap_last(dxm), x.shape)

    def dy():
        dym = _swap_last(xm) @ dout
        return _sum_batch(dym if y.ndim == 1 or not trans_y else _swap_last(dym), y.shape)

    return k.grads({"X@GRAD": dx, "Y@GRAD": dy})


def _sum_batch(grad, shape):
    """Undo batch broadcasting (and 1-D promotion) of a matmul operand."""
    if len(shape) == 1:
        return grad.reshape(-1, shape[0]).sum(0)
    lead = grad.ndim - len(shape)
    if lead:
        grad = grad.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, s in enumerate(shape[:-2]) if s == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


@kernel("matmul_v2")
def matmul_v2(k):
    return {"Out": _matmul(k.x("X"), k.x("Y"), k.attr("trans_x"), k.attr("trans_y"))}


@kernel("matmul_v2_grad")
def matmul_v2_grad(k):
    return _matmul_grads(k, k.x("X"), k.x("Y"), k.x("Out@GRAD"), k.attr("trans_x"), k.attr("trans_y"))


@kernel("matmul")
def matmul(k):
    x, y = k.x("X"), k.x("Y")
    out = _matmul(x, y, k.attr("transpose_X"), k.attr("transpose_Y")) * k.attr("alpha")
    return {"Out": out.reshape(1) if x.ndim == y.ndim == 1 else out}


@kernel("matmul_grad")
def matmul_grad(k):
    x, y = k.x("X"), k.x("Y")
    dout = k.x("Out@GRAD") * k.attr("alpha")
    dout = dout.reshape(()) if x.ndim == y.ndim == 1 else dout
    return _matmul_grads(k, x, y, dout, k.attr("transpose_X"), k.attr("transpose_Y"))


kernel("bmm")(lambda k: {"Out": k.x("X") @ k.x("Y")})
kernel("bmm_grad")(lambda k: _matmul_grads(k, k.x("X"), k.x("Y"), k.x("Out@GRAD"), False, False))


@kernel("bilinear_tensor_product")
def bilinear_tensor_product(k):
    out = np.einsum("bm,kmn,bn->bk", k.x("X"), k.x("Weight"), k.x("Y"))
    bias = k.optional("Bias")
    return {"Out": out if bias is None else out + bias}


@kernel("bilinear_tensor_product_grad")
def bilinear_tensor_product_grad(k):
    x, y, w, d = k.x("X"), k.x("Y"), k.x("Weight"), k.x("Out@GRAD")
    return k.grads({"X@GRAD": lambda: np.einsum("bk,kmn,bn->bm", d, w, y),
                    "Y@GRAD": lambda: np.einsum("bk,kmn,bm->bn", d, w, x),
                    "Weight@GRAD": lambda: np.einsum("bk,bm,bn->kmn", d, x, y),
                    "Bias@GRAD": lambda: d.sum(axis=0, keepdims=True)})


def _scalar(k, slot: str, attr: str, dtype):
    """The slot's one value when given, else the attribute; Paddle casts both to an integer X's dtype."""
    tensor = k.optional(slot)
    value = tensor.reshape(-1)[0] if tensor is not None else k.attr(attr)
    return dtype.type(value) if dtype.kind in "iu" else float(value)


@kernel("scale")
def scale(k):
    x = k.x("X")
    dtype = x.dtype
    if dtype.char in "efdg" and not (k.ins.get("ScaleTensor") or k.ins.get("BiasTensor")):   # the common case
        s, b = float(k.attr("scale")), float(k.attr("bias"))
    else:
        s, b = _scalar(k, "ScaleTensor", "scale", dtype), _scalar(k, "BiasTensor", "bias", dtype)
    out = x * s + b if k.attr("bias_after_scale") else (x + b) * s
    return {"Out": out if out.dtype is dtype else out.astype(dtype)}


@kernel("sum")
def sum_(k):
    arrays = k.xs("X")
    if isinstance(arrays[0], TensorArray):   # the backward adds up gradient arrays too
        return {"Out": TensorArray.sum(arrays)}
    out = arrays[0].copy()
    for a in arrays[1:]:
        out += a
    return {"Out": out}


def _factor(k):
    return float(k.x("FactorTensor").reshape(-1)[0]) if k.has("FactorTensor") else k.attr("factor")


unary("exp", lambda x, k: np.exp(x), lambda out, d, k: d * out, uses="Out")
unary("log", lambda x, k: np.log(x), lambda x, d, k: d / x)
unary("sqrt", lambda x, k: np.sqrt(x), lambda out, d, k: d * 0.5 / out, uses="Out")
unary("rsqrt", lambda x, k: 1 / np.sqrt(x), lambda out, d, k: d * -0.5 * out ** 3, uses="Out")
unary("square", lambda x, k: x * x, lambda x, d, k: d * 2 * x)
unary("abs", lambda x, k: np.abs(x), lambda x, d, k: d * np.sign(x))
unary("cos", lambda x, k: np.cos(x), lambda x, d, k: -d * np.sin(x))
unary("sin", lambda x, k: np.sin(x), lambda x, d, k: d * np.cos(x))
unary("pow", lambda x, k: np.power(x, _factor(k)), lambda x, d, k: d * _factor(k) * np.power(x, _factor(k) - 1))
kernel("sign")(lambda k: {"Out": np.sign(k.x("X"))})


def _bounds(k):
    """clip's bounds: the Min/Max tensors when given, else the attributes."""
    lo = float(k.x("Min").reshape(-1)[0]) if k.has("Min") else k.attr("min")
    hi = float(k.x("Max").reshape(-1)[0]) if k.has("Max") else k.attr("max")
    if not lo <= hi:
        raise ValueError(f"min {lo:g} is above max {hi:g}")
    return lo, hi


def _clip_grad(x, d, k):
    lo, hi = _bounds(k)
    return d * ((x > lo) & (x < hi))


unary("clip", lambda x, k: np.clip(x, *_bounds(k)), _clip_grad)


@kernel("where")
def where(k):
    return {"Out": np.where(k.x("Condition"), k.x("X"), k.x("Y"))}


@kernel("where_grad")
def where_grad(k):
    cond, dout = k.x("Condition"), k.x("Out@GRAD")
    return k.grads({"X@GRAD": lambda: unbroadcast(np.where(cond, dout, 0), k.x("X").shape),
                    "Y@GRAD": lambda: unbroadcast(np.where(cond, 0, dout), k.x("Y").shape)})


def _cumsum(x, k, reverse):
    """Running sum along `axis` (of the flattened array with `flatten`), optionally exclusive/reversed."""
    flat = k.attr("flatten")
    axis = 0 if flat else normalize_axis(k.attr("axis"), x.ndim)
    a = np.moveaxis(x.reshape(-1) if flat or x.ndim == 0 else x, axis, -1)  # a 0-d X runs as [1]
    a = a[..., ::-1] if reverse else a
    out = np.cumsum(a, axis=-1, dtype=a.dtype)
    if k.attr("exclusive"):
        out = np.concatenate([np.zeros_like(out[..., :1]), out[..., :-1]], axis=-1)
    out = np.moveaxis(out[..., ::-1] if reverse else out, -1, axis)
    return out if flat else out.reshape(x.shape)


kernel("cumsum")(lambda k: {"Out": _cumsum(k.x("X"), k, k.attr("reverse"))})
kernel("cumsum_grad")(lambda k: {"X@GRAD": _cumsum(k.x("Out@GRAD"), k, not k.attr("reverse")).reshape(k.x("X").shape)})
