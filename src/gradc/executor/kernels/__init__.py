"""Numpy kernels: op type -> function(ctx) -> {output slot: array or list of arrays}.

    @kernel("relu")
    def relu(k): return {"Out": np.maximum(k.x("X"), 0)}

Kernel modules mirror the op families in gradc.ops, and like them are imported the first time one of their op
types is read from KERNELS (gradc.optable). Which module registers which kernel is in families.py, written by
tools/op_families.py.
"""

from __future__ import annotations

from collections.abc import Callable

from ...optable import FamilyTable, OpTable
from ..plugin_kernels import is_plugin_kernel, shape_checked
from .families import FAMILIES

KERNELS: OpTable = OpTable()   # op type -> kernel
# op type -> the input slots its kernel reads only the shape and dtype of
SHAPE_ONLY: dict[str, frozenset[str]] = FamilyTable(KERNELS)


def kernel(*types: str, replace: bool = False, shape_only: tuple[str, ...] = ()):
    """Register ``fn`` as the kernel of each op type in ``types``. ``shape_only``: input slots the kernel
    reads only the shape and dtype of (the executor frees their buffers early and passes a stub)."""

    def register(fn: Callable) -> Callable:
        for op_type in types:
            register_kernel(op_type, fn, replace, shape_only)
        return fn

    return register


def register_kernel(op_type: str, fn: Callable, replace: bool, shape_only: tuple[str, ...]) -> None:
    KERNELS.before_registering(op_type, replace)
    if KERNELS.holds(op_type) and not replace:
        raise ValueError(f"op '{op_type}' already has a kernel: register yours under another op name, or pass "
                         f"replace=True to override it")
    KERNELS[op_type] = shape_checked(fn) if is_plugin_kernel(fn) else fn
    SHAPE_ONLY.pop(op_type, None)
    if shape_only:
        SHAPE_ONLY[op_type] = frozenset(shape_only)


KERNELS.defer(FAMILIES, __name__)
