"""Numpy kernels: op type -> function(ctx) -> {output slot: array or list of arrays}.

    @kernel("relu")
    def relu(k): return {"Out": np.maximum(k.x("X"), 0)}

Kernel modules mirror the op families in gradc.ops; importing this package registers them all.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

KERNELS: dict[str, Callable] = {}
SHAPE_ONLY: dict[str, frozenset[str]] = {}   # op type -> input slots its kernel reads only the shape and dtype of


def kernel(*types: str, replace: bool = False, shape_only: tuple[str, ...] = ()):
    """Register ``fn`` as the kernel of each op type in ``types``. ``shape_only``: input slots the kernel
    reads only the shape and dtype of (the executor frees their buffers early and passes a stub)."""

    def register(fn: Callable) -> Callable:
        for op_type in types:
            if op_type in KERNELS and not replace:
                raise ValueError(f"op '{op_type}' already has a kernel")
            KERNELS[op_type] = fn
            SHAPE_ONLY.pop(op_type, None)
            if shape_only:
                SHAPE_ONLY[op_type] = frozenset(shape_only)
        return fn

    return register


def load_all() -> None:
    """Import every kernel module (one per op family, mirroring gradc.ops)."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
