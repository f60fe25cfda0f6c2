"""Where a kernel's results go: each value, in its var's declared dtype, into the scope where its name lives."""

from __future__ import annotations

import numpy as np

from ..bfloat16 import BFLOAT16, STORAGE, round_to_bfloat16
from ..errors import ExecutionError
from ..float8 import SPECS as FLOAT8_SPECS
from ..float8 import Float8Spec
from ..ir import EMPTY_VAR, GRAD_SUFFIX, Block, VarType
from ..ir.types import NUMPY_DTYPE_NAMES
from .context import KernelContext
from .scope import Scope
from .selected_rows import SelectedRows
from .tensor_array import TensorArray


def write_spec(block: Block, name: str, declared: bool = True) -> tuple[str, object, bool]:
    """(name, the declared numpy dtype the value is cast to (BFLOAT16, a float8 spec: rounded to it), or None to
    keep the kernel's; persistable)."""
    var = block.find_var(name)
    if var is None or not declared or var.type not in (VarType.DENSE_TENSOR, VarType.SELECTED_ROWS):
        return name, None, bool(var and var.persistable)
    if var.dtype == VarType.BF16:   # float32 values rounded to bfloat16 (gradc.bfloat16)
        return name, BFLOAT16, bool(var.persistable)
    if var.dtype in FLOAT8_SPECS:   # float32 values rounded to float8 (gradc.float8)
        return name, FLOAT8_SPECS[var.dtype], bool(var.persistable)
    dtype = NUMPY_DTYPE_NAMES.get(var.dtype)
    return name, np.dtype(dtype) if dtype else None, bool(var.persistable)


def place(name: str, value, persistable: bool, scope: Scope, outer: list[dict] | None, run_scope: Scope) -> None:
    """Write where the name lives, this scope or an outer one; a new var here, a new persistable one in
    the run's persistent scope (parameters outlive the run)."""
    if outer is None:
        if persistable and scope.owner(name) is None:
            run_scope.vars[name] = value
        else:
            scope.assign(name, value)
        return
    local = scope.vars
    if name in local:
        local[name] = value
        return
    for values in outer:
        if name in values:
            values[name] = value
            return
    (run_scope.vars if persistable else local)[name] = value


def store_slots(ctx: KernelContext, writes: tuple, results: dict, scope: Scope, outer: list[dict] | None,
                 run_scope: Scope) -> None:
    for slot, specs in writes:
        value = results.get(slot)
        if value is None:
            continue
        values = value if type(value) is list else [value]   # a TensorArray is one value
        if len(values) != len(specs):
            raise ExecutionError(f"{ctx.where}: kernel returned {len(values)} value(s) for output slot "
                                 f"{slot}, which names {len(specs)} var(s)")
        for (name, dtype, persistable), array in zip(specs, values):
            if array is None or name == EMPTY_VAR:
                continue
            if dtype is not None and (type(array) is not np.ndarray or array.dtype is not dtype):
                array = as_declared(ctx, name, array, dtype)
            place(name, array, persistable, scope, outer, run_scope)


def as_declared(ctx: KernelContext, name: str, array, dtype: np.dtype) -> np.ndarray:
    """The value in the var's declared dtype. A float kernel result wider than declared is a kernel
    bug (float32 silently computed in float64), reported rather than cast away; but a float16 var takes a float32
    result, rounded (Paddle's GPU kernels compute float16 in float32 and round what they write)."""
    if isinstance(array, TensorArray):
        raise ExecutionError(f"{ctx.where}: the kernel wrote a tensor array into '{name}', which the program "
                             f"declares a tensor")
    if isinstance(array, SelectedRows):   # sparse grads stay sparse, whatever the var declares (as in Paddle)
        return array.with_values(_as_bfloat16(ctx, name, array.values)) if dtype is BFLOAT16 else array
    array = np.asarray(array)
    if dtype is BFLOAT16:
        return _as_bfloat16(ctx, name, array)
    if type(dtype) is Float8Spec:
        return _as_float8(ctx, name, array, dtype)
    if array.dtype == dtype:
        return array
    if array.dtype.kind == "f" and dtype.kind == "f" and array.dtype.itemsize > dtype.itemsize and not \
            (array.dtype == np.float32 and dtype == np.float16):   # float16 computes in float32, as CUDA's kernels
        if _inputs_as_wide(ctx, array.dtype):   # the declaration is off, not the kernel: Paddle keeps the value
            return array
        raise ExecutionError(f"{ctx.where}: the kernel computed '{name}' as {array.dtype}, but the program "
                             f"declares {dtype}")
    if array.dtype.kind == "c" and dtype.kind != "c":
        if GRAD_SUFFIX not in name:   # a forward value: casting would drop its imaginary part unseen
            raise ExecutionError(f"{ctx.where}: the kernel computed '{name}' as {array.dtype}, but the program "
                                 f"declares {dtype}")
        array = array.real   # a real var's grad is the real part (dL/dRe) of a complex one
    return array.astype(dtype)


def _inputs_as_wide(ctx: KernelContext, dtype: np.dtype) -> bool:
    """Whether an input of the op holds floats of ``dtype``: a result that wide is then the kernel's due, as Paddle's
    legacy x * y of a float32 x and a float64 y declares its float64 product float32 (the dtype of x)."""
    for names in ctx.ins.values():
        for name in names:
            value = ctx.scope.find(name)
            if type(value) is np.ndarray and value.dtype.kind == "f" and value.dtype.itemsize >= dtype.itemsize:
                return True
    return False


def _as_bfloat16(ctx: KernelContext, name: str, array: np.ndarray) -> np.ndarray:
    """A result for a bfloat16 var: computed in float32 (or narrower, or as integers), rounded to bfloat16."""
    if array.dtype.kind == "c" or (array.dtype.kind == "f" and array.dtype.itemsize > STORAGE.itemsize):
        raise ExecutionError(f"{ctx.where}: the kernel computed '{name}' as {array.dtype}, but the program "
                             f"declares bfloat16 (computed in float32)")
    return round_to_bfloat16(array)


def _as_float8(ctx: KernelContext, name: str, array: np.ndarray, spec: Float8Spec) -> np.ndarray:
    """A result for a float8 var: computed in float32 (or narrower, or as integers), rounded to its format."""
    if array.dtype.kind == "c" or (array.dtype.kind == "f" and array.dtype.itemsize > STORAGE.itemsize):
        raise ExecutionError(f"{ctx.where}: the kernel computed '{name}' as {array.dtype}, but the program "
                             f"declares {spec} (computed in float32)")
    return spec.round(array)
