"""Direct steps of a classifier's loss: softmax_with_cross_entropy with hard labels and its grad, the mean over
all axes and its grad, and the seed (fill_constant). Each runs once a step, so their kernels'
generic code runs cold; these make the kernels' own numpy calls on the common case (no ignored label)."""

from __future__ import annotations

import math

import numpy as np

from ...ir.types import DTYPE_BY_NUMPY_NAME
from ...limits import check_allocation
from ..kernels.activation import SHIFT_FLOOR, log_softmax
from ..scope import MISSING
from . import FALLBACK, binds, fits


def _attr(op, defaults: dict, name: str):
    """The op's attribute, read live, else the definition's default."""
    return op.attrs.get(name, defaults.get(name, MISSING))


@binds("fill_constant")
def _fill_constant(op, ins, outs, defaults):
    """A float value and a shape from the attributes (no value or shape tensors)."""
    if not fits(ins, outs, set(), {"Out"}):
        return None
    out, dtype = outs["Out"]
    code = DTYPE_BY_NUMPY_NAME.get(dtype.name)   # the dtype attribute that makes the declared dtype

    def step(values, params, scope):
        shape, value = _attr(op, defaults, "shape"), _attr(op, defaults, "value")
        if type(value) is not float or _attr(op, defaults, "str_value") or _attr(op, defaults, "dtype") != code \
                or any(d < 0 for d in shape):
            return FALLBACK
        check_allocation(math.prod(shape), dtype.itemsize, "")   # over the limit: the kernel reports it
        values[out] = np.full(tuple(shape), value, dtype)
        return None
    return step


@binds("reduce_mean")
def _reduce_mean(op, ins, outs, defaults):
    """The mean over every axis (the loss): the kernel's np.mean, its scalar stored as a 0-d array as the
    executor stores a kernel's."""
    if not fits(ins, outs, {"X"}, {"Out"}):
        return None
    x_name, (out, dtype) = ins["X"], outs["Out"]

    def step(values, params, scope):
        x = values[x_name]
        if not (_attr(op, defaults, "reduce_all") or not _attr(op, defaults, "dim")) or x.dtype is not dtype \
                or dtype not in _SUMMED_AS_IS or not x.size:
            return FALLBACK
        # np.mean's own sum and division (its float64 quotient rounds to the float32 one), without its Python
        # layers: two calls, not six, in an op whose cold calls cost ~5 us each
        total = np.add.reduce(x, axis=tuple(range(x.ndim)), keepdims=_attr(op, defaults, "keep_dim"))
        values[out] = np.asarray(total / x.size)
        return None
    return step


_SUMMED_AS_IS = (np.dtype(np.float32), np.dtype(np.float64))   # np.mean sums other dtypes in a wider one


@binds("reduce_mean_grad")
def _reduce_mean_grad(op, ins, outs, defaults):
    """The mean over every axis: dX is dOut / X's size everywhere."""
    if not fits(ins, outs, {"X", "Out@GRAD"}, {"X@GRAD"}):
        return None
    x_name, d_name, (dx, dtype) = ins["X"], ins["Out@GRAD"], outs["X@GRAD"]

    def step(values, params, scope):
        x, dout = values[x_name], values[d_name]
        if not (_attr(op, defaults, "reduce_all") or not _attr(op, defaults, "dim")) or dout.dtype is not dtype \
                or dout.shape != ((1,) * x.ndim if _attr(op, defaults, "keep_dim") else ()):
            return FALLBACK
        values[dx] = np.divide(dout, math.prod(x.shape), out=np.empty(x.shape, dtype))
        return None
    return step


def _hard_labels(op, defaults, logits, label) -> np.ndarray | None:
    """The labels as an int64 column of class indices when the kernel's common case holds: softmax over the
    last axis of a batch of rows, one label per row, none ignored, all in range; else None."""
    axis = _attr(op, defaults, "axis")
    if logits.ndim != 2 or axis not in (-1, 1) or _attr(op, defaults, "soft_label") \
            or not _attr(op, defaults, "use_softmax") or label.shape != (logits.shape[0], 1):
        return None
    index = label.astype(np.int64, copy=False)
    classes, ignore = logits.shape[1], _attr(op, defaults, "ignore_index")
    # one max over the bits read unsigned: a negative label is then above any class count
    if not index.size or index.view(np.uint64).max() >= classes \
            or (0 <= ignore < classes and (index == ignore).any()):
        return None
    return index


@binds("softmax_with_cross_entropy")
def _softmax_with_cross_entropy(op, ins, outs, defaults):
    if not fits(ins, outs, {"Logits", "Label"}, {"Softmax", "Loss"}):
        return None
    logits_name, label_name = ins["Logits"], ins["Label"]
    (softmax_name, softmax_dtype), (loss_name, loss_dtype) = outs["Softmax"], outs["Loss"]

    def step(values, params, scope):
        logits, label = values[logits_name], values[label_name]
        index = _hard_labels(op, defaults, logits, label)
        if index is None:
            return FALLBACK
        log_prob = log_softmax(logits, 1, SHIFT_FLOOR)
        softmax = np.exp(log_prob)
        loss = -log_prob[np.arange(len(index))[:, None], index]   # take_along_axis's gather
        if softmax.dtype is not softmax_dtype or loss.dtype is not loss_dtype:
            return FALLBACK
        values[softmax_name] = softmax
        values[loss_name] = loss
        return None
    return step


@binds("softmax_with_cross_entropy_grad")
def _softmax_with_cross_entropy_grad(op, ins, outs, defaults):
    if not fits(ins, outs, {"Softmax", "Label", "Loss@GRAD"}, {"Logits@GRAD"}):
        return None
    softmax_name, label_name, d_name, (dx, dtype) = ins["Softmax"], ins["Label"], ins["Loss@GRAD"], *outs.values()

    def step(values, params, scope):
        softmax, dloss = values[softmax_name], values[d_name]
        index = _hard_labels(op, defaults, softmax, values[label_name])
        if index is None or softmax.dtype is not dtype or dloss.dtype is not dtype:
            return FALLBACK
        # the kernel's (softmax * sum(target) - target) * dloss, whose one-hot target sums to 1 in each row
        result = softmax.copy()
        result[np.arange(len(index))[:, None], index] -= 1
        result *= dloss
        values[dx] = result
        return None
    return step
