"""The numpy executor: Scope, Executor, the kernel registry, and SelectedRows (a sparse gradient's value). Each name
imports its module on first use, so the kernel registry (a plugin's ``@kernel``) does not bring in the executor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..firstuse import on_first_use

if TYPE_CHECKING:   # what __getattr__ imports on first use, for type checkers and editors
    from .executor import Executor
    from .kernels import KERNELS, kernel
    from .lod import LoDTensor
    from .scope import Scope, global_scope
    from .selected_rows import SelectedRows

_ON_FIRST_USE = {"Executor": ".executor", "KERNELS": ".kernels", "kernel": ".kernels", "Scope": ".scope",
                 "global_scope": ".scope", "SelectedRows": ".selected_rows", "LoDTensor": ".lod"}
__all__ = ["KERNELS", "Executor", "LoDTensor", "Scope", "SelectedRows", "global_scope", "kernel"]
__getattr__, __dir__ = on_first_use(__name__, _ON_FIRST_USE, globals())
