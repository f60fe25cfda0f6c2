"""Direct steps: the ops of an fc layer (mul, the bias add, relu) and their grads, bound once per plan to a
closure that reads its inputs from the run's dicts, makes its kernel's numpy calls and stores its outputs
itself, with no kernel context, results dict or generic store between (those cost ~1.5 µs an op, as much as
a 64x64 op's arithmetic).

A step tests what its kernel's fast path tests and returns FALLBACK for any other case (another rank,
attribute or result dtype); an exception (a value missing, of another kind) falls back too. The op's kernel
then runs as always, and reports whatever is wrong. A step reads ``values`` (the run's own), then ``params``
(the caller's scope), then the scopes above; it writes ``values`` only: the executor uses direct steps in a
run only when no outer scope holds a var they write."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir import EMPTY_VAR
from .context import KernelContext
from .kernels import KERNELS, load_all
from .scope import MISSING

load_all()

FALLBACK = object()
_ndarray = np.ndarray
_BINDERS: dict[Callable, Callable] = {}   # kernel -> binder(op, ins, outs, defaults) -> step or None


def binds(op_type: str):
    """Register a binder for the op type's kernel as it is now: a kernel replaced later has none."""
    def register(binder: Callable) -> Callable:
        _BINDERS[KERNELS[op_type]] = binder
        return binder
    return register


def direct_step(kernel: Callable, ctx: KernelContext, writes: tuple) -> Callable | None:
    """The op's step(values, params, scope) -> None (done) or FALLBACK; None when its kernel has no binder, a
    slot names several vars, or an output is persistable or has no declared dtype (the executor stores those)."""
    binder = _BINDERS.get(kernel)
    if binder is None or any(len(args) != 1 for args in ctx.ins.values()):
        return None
    outs = {}
    for slot, specs in writes:
        if len(specs) != 1:
            return None
        name, dtype, persistable = specs[0]
        if persistable or dtype is None or name == EMPTY_VAR:
            return None
        outs[slot] = (name, dtype)
    ins = {slot: args[0] for slot, args in ctx.ins.items()}
    return binder(ctx.op, ins, outs, ctx.defaults)


def _fits(ins: dict, outs: dict, inputs: set[str], outputs: set[str], all_outputs: bool) -> bool:
    """The op fills the kernel's input slots and writes its output slots: all of them, or at least one."""
    return inputs <= ins.keys() and bool(outs) and (outs.keys() == outputs if all_outputs else outs.keys() <= outputs)


def _col_defaults(defaults: dict) -> tuple:
    return defaults.get("x_num_col_dims", MISSING), defaults.get("y_num_col_dims", MISSING)


@binds("mul")
def _mul(op, ins, outs, defaults):
    if not _fits(ins, outs, {"X", "Y"}, {"Out"}, True):
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
    if not _fits(ins, outs, {"X", "Y", "Out@GRAD"}, {"X@GRAD", "Y@GRAD"}, False):
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
    if not _fits(ins, outs, {"X", "Y"}, {"Out"}, True):
        return None
    x_name, y_name, (out, dtype) = ins["X"], ins["Y"], outs["Out"]
    axis_default = defaults.get("axis", MISSING)

    def step(values, params, scope):
        x = values[x_name] if x_name in values else params[x_name] if x_name in params else scope.find(x_name)
        y = values[y_name] if y_name in values else params[y_name] if y_name in params else scope.find(y_name)
        if x.ndim != y.ndim and op.attrs.get("axis", axis_default) not in (-1, abs(x.ndim - y.ndim)):
            return FALLBACK   # the lower-rank operand aligned elsewhere than with the trailing dims
        result = np.add(x, y)
        if type(result) is not _ndarray or result.dtype is not dtype:
            return FALLBACK
        values[out] = result
        return None
    return step


@binds("elementwise_add_grad")
def _elementwise_add_grad(op, ins, outs, defaults):
    """The kernel's fc case: a batch of rows plus a bias row; dX is dOut itself, dY its sum over the batch."""
    if not _fits(ins, outs, {"X", "Y", "Out@GRAD"}, {"X@GRAD", "Y@GRAD"}, False):
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
        y_grad = dout.sum(axis=(0,)) if dy else None
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
    if not _fits(ins, outs, {"X"}, {"Out"}, True):
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
    if not _fits(ins, outs, {"Out", "Out@GRAD"}, {"X@GRAD"}, True):
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
