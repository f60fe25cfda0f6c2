"""The numpy executor: Scope, Executor, the kernel registry, and SelectedRows (a sparse gradient's value). Each name
imports its module on first use, so the kernel registry (a plugin's ``@kernel``) does not bring in the executor."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # what __getattr__ imports on first use, for type checkers and editors
    from .executor import Executor
    from .kernels import KERNELS, kernel
    from .scope import Scope, global_scope
    from .selected_rows import SelectedRows

_ON_FIRST_USE = {"Executor": ".executor", "KERNELS": ".kernels", "kernel": ".kernels", "Scope": ".scope",
                 "global_scope": ".scope", "SelectedRows": ".selected_rows"}
__all__ = ["KERNELS", "Executor", "Scope", "SelectedRows", "global_scope", "kernel"]


def __getattr__(name: str):
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_ON_FIRST_USE[name], __name__), name)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ON_FIRST_USE))
