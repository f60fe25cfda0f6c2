"""The numpy executor: Scope, Executor, and the kernel registry."""

from .executor import Executor
from .kernels import KERNELS, kernel
from .scope import Scope, global_scope

__all__ = ["KERNELS", "Executor", "Scope", "global_scope", "kernel"]
