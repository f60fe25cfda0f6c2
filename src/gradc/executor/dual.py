"""Dual numbers over numpy arrays: a value and its exact tangent along one direction, carried unchanged through
a kernel's numpy code (ufuncs, in place too, and the array functions that only move or sum values), so a kernel
written for arrays returns its outputs' directional derivatives with them. Duals nest (a dual whose parts are
duals): ``along_each`` moves a value along k directions at once, and ``across`` reads the derivative along all of
them, which the ops along directions of gradc.ops.directional_double take (kernels rnn, lod_rnn_double,
product_directions).
Anything these rules do not cover raises TypeError rather than dropping a tangent.
"""

from __future__ import annotations

import numpy as np

from ..ir import EMPTY_VAR


def _tangent_rules():
    """ufunc -> tangent of its result from (values, tangents with None for a constant, result value)."""

    def part(t):
        return 0 if t is None else t

    return {
        np.add: lambda v, t, r: part(t[0]) + part(t[1]),
        np.subtract: lambda v, t, r: part(t[0]) - part(t[1]),
        np.multiply: lambda v, t, r: part(t[0]) * v[1] + v[0] * part(t[1]),
        np.true_divide: lambda v, t, r: (part(t[0]) - r * part(t[1])) / v[1],
        np.negative: lambda v, t, r: -t[0],
        np.reciprocal: lambda v, t, r: -t[0] * r * r,
        np.exp: lambda v, t, r: t[0] * r,
        np.tanh: lambda v, t, r: t[0] * (1 - r * r),
        np.matmul: lambda v, t, r: (0 if t[0] is None else np.matmul(t[0], v[1]))
        + (0 if t[1] is None else np.matmul(v[0], t[1])),
        # the argument the result took (the first on ties, as numpy's maximum)
        np.maximum: lambda v, t, r: np.where(np.broadcast_to(r == v[0], r.shape), part(t[0]), part(t[1])),
    }


TANGENT_RULES = _tangent_rules()
COMPARISONS = {np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal}
# array functions linear in their array arguments: applied to the values and to the tangents alike
LINEAR = {np.concatenate, np.stack, np.broadcast_to, np.ascontiguousarray, np.transpose, np.reshape, np.sum,
          np.copy, np.moveaxis, np.squeeze, np.expand_dims}


def _array(item):
    return item if isinstance(item, Dual) else np.asarray(item)


def _values(item):
    if isinstance(item, Dual):
        return item.value
    return [_values(x) for x in item] if isinstance(item, (list, tuple)) else item


def _tangents(item):
    if isinstance(item, Dual):
        return item.tangent
    if isinstance(item, (list, tuple)):
        return [_tangents(x) for x in item]
    return np.zeros_like(item) if isinstance(item, np.ndarray) else item


class Dual(np.lib.mixins.NDArrayOperatorsMixin):
    """value + eps tangent with eps^2 = 0, elementwise; a view (an index, a reshape) shares both arrays."""

    __slots__ = ("value", "tangent")

    def __init__(self, value, tangent=None):
        self.value = _array(value)
        self.tangent = np.zeros_like(self.value) if tangent is None else _array(tangent)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a dual number was read as a plain array: its tangent would be lost")

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if method != "__call__":
            raise TypeError(f"dual numbers take {ufunc.__name__} only elementwise, not by {method}")
        if any(isinstance(x, (list, tuple)) for x in inputs):
            raise TypeError(f"{ufunc.__name__} of a list and a dual number: stack the list first")
        values = [_values(x) for x in inputs]
        result = ufunc(*values, **kwargs)
        if ufunc in COMPARISONS:
            return result
        if ufunc not in TANGENT_RULES:
            raise TypeError(f"dual numbers have no tangent rule for {ufunc.__name__}")
        tangents = [x.tangent if isinstance(x, Dual) else None for x in inputs]
        tangent = np.broadcast_to(TANGENT_RULES[ufunc](values, tangents, result), result.shape)
        if out is None:
            return Dual(result, tangent.copy() if isinstance(tangent, Dual) else np.array(tangent))
        target = out[0]
        if not isinstance(target, Dual):
            raise TypeError(f"{ufunc.__name__} of a dual number written into a plain array")
        target.value[...], target.tangent[...] = result, tangent
        return target

    def __array_function__(self, func, types, args, kwargs):
        if func in LINEAR:
            return Dual(func(*_values(args), **_values(kwargs)), func(*_tangents(args), **_tangents(kwargs)))
        if func in (np.empty_like, np.zeros_like):
            return Dual(func(args[0].value, *args[1:], **kwargs), np.zeros_like(args[0].value, *args[1:], **kwargs))
        if func is np.ones_like:
            return Dual(np.ones_like(args[0].value, *args[1:], **kwargs),
                        np.zeros_like(args[0].value, *args[1:], **kwargs))
        if func is np.where:   # a plain condition picks values and tangents alike
            condition, *picked = args
            return Dual(np.where(condition, *_values(picked)), np.where(condition, *_tangents(picked)))
        if func is np.clip:   # the tangent where the value passes, zero where it is clamped
            value = np.clip(*_values(args), **kwargs)
            return Dual(value, np.where(value == args[0].value, args[0].tangent, 0))
        if func in (np.result_type, np.iscomplexobj):
            return func(*_values(args), **kwargs)
        raise TypeError(f"dual numbers do not go through numpy's {func.__name__}")

    def __getitem__(self, index):
        return Dual(self.value[index], self.tangent[index])

    def __setitem__(self, index, item):
        self.value[index] = _values(item)
        self.tangent[index] = item.tangent if isinstance(item, Dual) else 0

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    shape = property(lambda self: self.value.shape)
    ndim = property(lambda self: self.value.ndim)
    size = property(lambda self: self.value.size)
    dtype = property(lambda self: self.value.dtype)
    T = property(lambda self: Dual(self.value.T, self.tangent.T))

    def reshape(self, *shape):
        return Dual(self.value.reshape(*shape), self.tangent.reshape(*shape))

    def transpose(self, *axes):
        return Dual(self.value.transpose(*axes), self.tangent.transpose(*axes))

    def copy(self):
        return Dual(self.value.copy(), self.tangent.copy())

    def sum(self, *args, **kwargs):
        return Dual(self.value.sum(*args, **kwargs), self.tangent.sum(*args, **kwargs))

    def astype(self, dtype):
        return Dual(self.value.astype(dtype), self.tangent.astype(dtype))


def along_each(value, directions: list):
    """``value`` moved along each of ``directions`` by an infinitesimal of its own (eps_1 ... eps_k, each squaring
    to 0): duals nested once per direction, the last outermost; a direction None is zero."""
    for depth, direction in enumerate(directions):
        tangent = np.zeros(value.shape, value.dtype) if direction is None else \
            direction.astype(value.dtype).reshape(value.shape)
        for _ in range(depth):
            tangent = Dual(tangent)
        value = Dual(value, tangent)
    return value


def across(value, count: int):
    """The part of ``value`` along all ``count`` directions of ``along_each``: the eps_1 ... eps_k coefficient, the
    derivative along each direction once."""
    for _ in range(count):
        value = value.tangent if isinstance(value, Dual) else np.zeros_like(value)
    return value


def listed(k, slot: str) -> list:
    """The arrays of a kernel's list slot, None at @EMPTY@ (a direction or grad that is zero)."""
    return [None if name == EMPTY_VAR else k.read(name, slot) for name in k.op.inputs.get(slot, [])]
