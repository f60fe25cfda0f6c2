"""Kernels of gradc.ops.tensor_array. An array value is a TensorArray (one value, a list of tensors with
None where a slot was never written). A write updates the array in place, as Paddle's does: a loop that
writes one slot per iteration costs O(1) per write, and every scope that holds the array sees the slot."""

from __future__ import annotations

import numpy as np

from ...errors import ExecutionError
from ...ops.tensor_array import stack_axis
from ..lod import PASSES_LOD
from ..tensor_array import TensorArray
from . import kernel

PASSES_LOD.add("read_from_array")   # a slot's value comes back with the LoD it was written with


def _fail(k, message: str):
    raise ExecutionError(f"{k.where}: {message}")


def _index(k) -> int:
    index = np.asarray(k.x("I"))
    name = k.op.input("I")[0]
    if index.size != 1 or index.dtype.kind not in "iu":
        _fail(k, f"the index I ({name}) must hold one integer, got {index.dtype} {list(index.shape)}")
    value = int(index.reshape(()))
    if value < 0:
        _fail(k, f"the index I ({name}) is {value}: array indices start at 0")
    return value


def _array(k, slot: str, missing_ok: bool = False) -> TensorArray:
    """The array in ``slot``; with ``missing_ok``, an array no op has written yet reads as empty."""
    name = k.op.input(slot)[0]
    value = k.scope.find(name) if missing_ok else k.x(slot)
    if value is None:
        return TensorArray()
    if not isinstance(value, TensorArray):
        _fail(k, f"{slot} ({name}) must be a tensor array, got {type(value).__name__}")
    return value


@kernel("write_to_array")
def write_to_array(k):
    index = _index(k)
    (name,) = k.out_names("Out")
    array = k.scope.find(name)
    if not isinstance(array, TensorArray):   # the first write creates the array
        array = TensorArray()
    if index >= len(array):
        array.extend([None] * (index + 1 - len(array)))
    array[index] = k.x("X")
    lod = k.lod("X")
    if lod:
        array.lods[index] = lod
    else:
        array.lods.pop(index, None)
    return {"Out": array}


@kernel("read_from_array")
def read_from_array(k):
    index = _index(k)
    like = k.optional("X_W")
    array = _array(k, "X", missing_ok=like is not None)
    if index < len(array) and array[index] is not None:
        k.set_lod("Out", array.lods.get(index))
        return {"Out": array[index]}
    if like is not None:   # the grad case: a slot no gradient reached is zero
        return {"Out": np.zeros_like(like)}
    written = [i for i, t in enumerate(array) if t is not None]
    _fail(k, f"reads slot {index} of array X ({k.op.input('X')[0]}), which was never written "
             f"(the array has {len(array)} slot(s); written: {written or 'none'})")


@kernel("lod_array_length")
def lod_array_length(k):
    return {"Out": np.array([len(_array(k, "X"))], np.int64)}


@kernel("array_pop")
def array_pop(k):
    array, index = _array(k, "array"), k.attr("index")
    if not -len(array) <= index < len(array):
        _fail(k, f"pops slot {index} of array ({k.op.input('array')[0]}), which has {len(array)} slot(s)")
    index %= len(array)
    value, lods = array.pop(index), array.lods
    if value is None:
        _fail(k, f"pops slot {index} of array ({k.op.input('array')[0]}), which was never written")
    array.lods = {i - (i > index): lod for i, lod in lods.items() if i != index}
    return {"array_out": array, "out": value}


def _bound(k, slot: str) -> int:
    value = np.asarray(k.x(slot))
    if value.size != 1 or value.dtype.kind not in "iu":
        _fail(k, f"{slot} ({k.op.input(slot)[0]}) must hold one integer, got {value.dtype} {list(value.shape)}")
    return int(value.reshape(()))


@kernel("slice_array")
def slice_array(k):
    array = _array(k, "input")
    picked = range(len(array))[_bound(k, "starts"):_bound(k, "ends")]
    out = TensorArray(array[i] for i in picked)
    out.lods = {n: array.lods[i] for n, i in enumerate(picked) if i in array.lods}
    return {"out": out}


def _slots(k) -> list:
    array = _array(k, "X")
    holes = [i for i, t in enumerate(array) if t is None]
    if not array or holes:
        _fail(k, f"array X ({k.op.input('X')[0]}) has {len(array)} slot(s)"
                 + (f"; slot(s) {holes} were never written" if holes else ": nothing to join"))
    return list(array)


def _axis(k, rank: int) -> int:
    return stack_axis(k.attr("axis"), rank, k.attr("use_stack"), lambda message: _fail(k, message))


@kernel("tensor_array_to_tensor")
def tensor_array_to_tensor(k):
    slots = _slots(k)
    axis = _axis(k, slots[0].ndim)
    try:
        if k.attr("use_stack"):
            return {"Out": np.stack(slots, axis), "OutIndex": np.ones(len(slots), np.int32)}
        return {"Out": np.concatenate(slots, axis), "OutIndex": np.array([t.shape[axis] for t in slots], np.int32)}
    except ValueError as error:
        _fail(k, f"cannot join the slots of X ({k.op.input('X')[0]}), shapes {[list(t.shape) for t in slots]}: "
                 f"{error}")


@kernel("tensor_array_to_tensor_grad")
def tensor_array_to_tensor_grad(k):
    slots, grad = _slots(k), k.x("Out@GRAD")
    axis = _axis(k, slots[0].ndim)
    if k.attr("use_stack"):
        parts = [np.take(grad, i, axis) for i in range(len(slots))]
    else:
        parts = np.split(grad, np.cumsum([t.shape[axis] for t in slots])[:-1], axis)
    return {"X@GRAD": TensorArray(np.ascontiguousarray(p) for p in parts)}
