"""Kernels of gradc.ops.math."""

from __future__ import annotations

import numpy as np

from . import kernel
from .broadcast import align, reduce_to


def _elementwise(k):
    x, y = k.x("X"), k.x("Y")
    xa, ya = align(x, y, k.attr("axis"))
    return x, y, xa, ya


def _binary(name, fn):
    kernel(name)(lambda k: {"Out": fn(*_elementwise(k)[2:])})


_binary("elementwise_add", np.add)
_binary("elementwise_sub", np.subtract)
_binary("elementwise_mul", np.multiply)
_binary("elementwise_div", np.divide)


def _binary_grad(name, dx, dy):
    """dx(xa, ya, dout) and dy(...) give the broadcast grads; they are summed back to X and Y."""

    @kernel(name)
    def grad(k):
        x, y, xa, ya = _elementwise(k)
        dout = k.x("Out@GRAD")
        out = {}
        if k.wants("X@GRAD"):
            out["X@GRAD"] = reduce_to(np.broadcast_to(dx(xa, ya, dout), dout.shape), x, xa)
        if k.wants("Y@GRAD"):
            out["Y@GRAD"] = reduce_to(np.broadcast_to(dy(xa, ya, dout), dout.shape), y, ya)
        return out


_binary_grad("elementwise_add_grad", lambda x, y, d: d, lambda x, y, d: d)
_binary_grad("elementwise_sub_grad", lambda x, y, d: d, lambda x, y, d: -d)
_binary_grad("elementwise_mul_grad", lambda x, y, d: d * y, lambda x, y, d: d * x)
_binary_grad("elementwise_div_grad", lambda x, y, d: d / y, lambda x, y, d: -d * x / (y * y))


def _flatten2d(a, num_col_dims):
    return a.reshape(int(np.prod(a.shape[:num_col_dims])), -1)


@kernel("mul")
def mul(k):
    x, y = k.x("X"), k.x("Y")
    xn, yn = k.attr("x_num_col_dims"), k.attr("y_num_col_dims")
    out = _flatten2d(x, xn) @ _flatten2d(y, yn)
    return {"Out": out.reshape(x.shape[:xn] + y.shape[yn:])}


@kernel("mul_grad")
def mul_grad(k):
    x, y, dout = k.x("X"), k.x("Y"), k.x("Out@GRAD")
    x2, y2 = _flatten2d(x, k.attr("x_num_col_dims")), _flatten2d(y, k.attr("y_num_col_dims"))
    d2 = dout.reshape(x2.shape[0], y2.shape[1])
    return {"X@GRAD": (d2 @ y2.T).reshape(x.shape), "Y@GRAD": (x2.T @ d2).reshape(y.shape)}


def _swap_last(a):
    return np.swapaxes(a, -1, -2)


def _as_matrices(k):
    """X and Y as (batch..., m, n) operands, 1-D inputs promoted the way matmul does."""
    x, y = k.x("X"), k.x("Y")
    xm = x[None, :] if x.ndim == 1 else (_swap_last(x) if k.attr("trans_x") else x)
    ym = y[:, None] if y.ndim == 1 else (_swap_last(y) if k.attr("trans_y") else y)
    return x, y, xm, ym


@kernel("matmul_v2")
def matmul_v2(k):
    x, y, xm, ym = _as_matrices(k)
    out = xm @ ym
    if x.ndim == 1:
        out = out[..., 0, :]
    if y.ndim == 1:
        out = out[..., 0]
    return {"Out": out}


@kernel("matmul_v2_grad")
def matmul_v2_grad(k):
    x, y, xm, ym = _as_matrices(k)
    dout = k.x("Out@GRAD")
    if x.ndim == 1:
        dout = np.expand_dims(dout, -2)
    if y.ndim == 1:
        dout = dout[..., None]
    dxm, dym = dout @ _swap_last(ym), _swap_last(xm) @ dout
    dx = dxm if x.ndim == 1 or not k.attr("trans_x") else _swap_last(dxm)
    dy = dym if y.ndim == 1 or not k.attr("trans_y") else _swap_last(dym)
    return {"X@GRAD": _sum_batch(dx, x.shape), "Y@GRAD": _sum_batch(dy, y.shape)}


def _sum_batch(grad, shape):
    """Undo batch broadcasting (and 1-D promotion) of a matmul operand."""
    if len(shape) == 1:
        return grad.reshape(-1, shape[0]).sum(0)
    lead = grad.ndim - len(shape)
    if lead:
        grad = grad.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, s in enumerate(shape[:-2]) if s == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


@kernel("scale")
def scale(k):
    x, s, b = k.x("X"), k.attr("scale"), k.attr("bias")
    out = x * s + b if k.attr("bias_after_scale") else (x + b) * s
    return {"Out": out.astype(x.dtype, copy=False)}


@kernel("sum")
def sum_(k):
    arrays = k.xs("X")
    out = arrays[0].copy()
    for a in arrays[1:]:
        out += a
    return {"Out": out}
