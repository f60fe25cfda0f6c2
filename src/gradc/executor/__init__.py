"""The numpy executor: Scope, Executor, the kernel registry, and SelectedRows (a sparse gradient's value)."""

from .executor import Executor
from .kernels import KERNELS, kernel
from .scope import Scope, global_scope
from .selected_rows import SelectedRows

__all__ = ["KERNELS", "Executor", "Scope", "SelectedRows", "global_scope", "kernel"]
