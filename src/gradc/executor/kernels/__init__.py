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


def kernel(*types: str, replace: bool = False):
    """Register ``fn`` as the kernel of each op type in ``types``."""

    def register(fn: Callable) -> Callable:
        for op_type in types:
            if op_type in KERNELS and not replace:
                raise ValueError(f"op '{op_type}' already has a kernel")
            KERNELS[op_type] = fn
        return fn

    return register


def load_all() -> None:
    """Import every kernel module (one per op family, mirroring gradc.ops)."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
