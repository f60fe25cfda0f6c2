"""Direct steps of an fc layer's ops: mul, the bias add (elementwise_add), relu, and their grads."""

from __future__ import annotations

import numpy as np

from ..scope import MISSING
from . import FALLBACK, binds, fits

_ndarray = np.ndarray


def _col_defaults(defaults: dict) -> tuple:
    return defaults.get("x_num_col_dims", MISSING), defaults.get("y_num_col_dims", MISSING)


@binds("mul")
def _mul(op, ins, outs, defaults):
    if not fits(ins, outs, {"X", "Y"}, {"Out"}):
        return None
    x_name, y_name, (out, dtype) = ins["X"], ins["Y"], outs["Out"]
    x_cols, y_cols = _col_defaults(defaults)

    def step(values, params, scope):
        x = values[x_name] if x_name in values else params[x_name] if x_name in params else scope.find(x_name)
        y = values[y_name] if y_name in values else params[y_name] if y_name in params else scope.find(y_name)
        attrs = op.attrs   # read live, as the kernel does
        if x.ndim != 2 or y.ndim != 2 or attrs.get("x_num_col_dims", x_cols) != 1 \
                or attrs.get("y_num_col_dims", y_cols) != 1:
            return FALLBACK
        result = x @ y
        if type(result) is not _ndarray or result.dtype is not dtype:
            return FALLBACK
        values[out] = result
        return None
    return step


@binds("mul_grad")
def _mul_grad(op, ins, outs, defaults):
    if not fits(ins, outs, {"X", "Y", "Out@GRAD"}, {"X@GRAD", "Y@GRAD"}, False):
        return None
    x_name, y_name, d_name = ins["X"], ins["Y"], ins["Out@GRAD"]
    dx, dx_dtype = outs.get("X@GRAD", (None, None))
    dy, dy_dtype = outs.get("Y@GRAD", (None, None))
    x_cols, y_cols = _col_defaults(defaults)

    def step(values, params, scope):
        x = values[x_name] if x_name in values else params[x_name] if x_name in params else scope.find(x_name)
        y = values[y_name] if y_name in values else params[y_name] if y_name in params else scope.find(y_name)
        dout = values[d_name]
        attrs = op.attrs
        if x.ndim != 2 or y.ndim != 2 or dout.ndim != 2 or attrs.get("x_num_col_dims", x_cols) != 1 \
                or attrs.get("y_num_col_dims", y_cols) != 1:
            return FALLBACK
        x_grad = dout @ y.T if dx else None
        y_grad = x.T @ dout if dy else None
        if dx and (type(x_grad) is not _ndarray or x_grad.dtype is not dx_dtype) \
                or dy and (type(y_grad) is not _ndarray or y_grad.dtype is not dy_dtype):
            return FALLBACK
        if dx:
            values[dx] = x_grad
        if dy:
            values[dy] = y_grad
        return None
    return step


@binds("elementwise_add")
def _elementwise_add(op, ins, outs, defaults):
    if not fits(ins, outs, {"X", "Y"}, {"Out"}):
        return None
    x_name, y_name, (out, dtype) = ins["X"], ins["Y"], outs["Out"]
    axis_default = defaults.get("axis", MISSING)

    def step(values, params, scope):
        x = values[x_name] if x_name in values else params[x_name] if x_name in params else scope.find(x_name)
        y = values[y_name] if y_name in values else params[y_name] if y_name in params else scope.find(y_name)
        if x.ndim != y.ndim and op.attrs.get("axis", axis_default) not in (-1, abs(x.ndim - y.ndim)):
            return FALLBACK   # the lower-rank operand aligned elsewhere than with the trailing dims
        result = x + y   # np.add, through the operator (a shorter call)
        if type(result) is not _ndarray or result.dtype is not dtype:
            return FALLBACK
        values[out] = result
        return None
    return step


@binds("elementwise_add_grad")
def _elementwise_add_grad(op, ins, outs, defaults):
    """The kernel's fc case: a batch of rows plus a bias row; dX is dOut itself, dY its sum over the batch."""
    if not fits(ins, outs, {"X", "Y", "Out@GRAD"}, {"X@GRAD", "Y@GRAD"}, False):
        return None
    x_name, y_name, d_name = ins["X"], ins["Y"], ins["Out@GRAD"]
    dx, dx_dtype = outs.get("X@GRAD", (None, None))
    dy, dy_dtype = outs.get("Y@GRAD", (None, None))
    axis_default = defaults.get("axis", MISSING)

    def step(values, params, scope):
        x = values[x_name] if x_name in values else params[x_name] if x_name in params else scope.find(x_name)
        y = values[y_name] if y_name in values else params[y_name] if y_name in params else scope.find(y_name)
        dout = values[d_name]
        axis = op.attrs.get("axis", axis_default)
        if x.shape != dout.shape or dout.ndim != 2 or y.shape != dout.shape[1:] \
                or not (axis == -1 or axis == 1 < len(dout)):
            return FALLBACK
        y_grad = np.add.reduce(dout, 0) if dy else None   # what ndarray.sum(axis=(0,)) calls
        if dx and (type(dout) is not _ndarray or dout.dtype is not dx_dtype) \
                or dy and (type(y_grad) is not _ndarray or y_grad.dtype is not dy_dtype):
            return FALLBACK
        if dx:
            values[dx] = dout
        if dy:
            values[dy] = y_grad
        return None
    return step


@binds("relu")
def _relu(op, ins, outs, defaults):
    if not fits(ins, outs, {"X"}, {"Out"}):
        return None
    x_name, (out, dtype) = ins["X"], outs["Out"]
    zero = np.zeros((), dtype)   # the kernel's 0, converted once rather than per call

    def step(values, params, scope):
        x = values[x_name] if x_name in values else params[x_name] if x_name in params else scope.find(x_name)
        result = np.maximum(x, zero)
        if type(result) is not _ndarray or result.dtype is not dtype:
            return FALLBACK
        values[out] = result
        return None
    return step


@binds("relu_grad")
def _relu_grad(op, ins, outs, defaults):
    if not fits(ins, outs, {"Out", "Out@GRAD"}, {"X@GRAD"}):
        return None
    out_name, d_name, (dx, dtype) = ins["Out"], ins["Out@GRAD"], outs["X@GRAD"]
    zero = np.zeros((), dtype)

    def step(values, params, scope):
        result = values[d_name] * (values[out_name] > zero)
        if type(result) is not _ndarray or result.dtype is not dtype:
            return FALLBACK
        values[dx] = result
        return None
    return step
