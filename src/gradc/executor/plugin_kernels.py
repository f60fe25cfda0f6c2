"""A plugin's kernel runs checked: a result shaped unlike the var the program declares for it is an error naming the
op and the kernel, where it happens (gradc's own kernels are trusted: they run unchecked, at full speed). No numpy
here: the kernels' index imports this module, and imports no numpy."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable

from ..errors import ExecutionError
from ..ir import EMPTY_VAR


def is_plugin_kernel(fn: Callable) -> bool:
    """A Python function defined outside gradc (a plugin's, a user's)."""
    return isinstance(fn, types.FunctionType) and fn.__module__.partition(".")[0] != "gradc"


def shape_checked(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def checked(k):
        results = fn(k)
        if isinstance(results, dict):
            for slot, value in results.items():
                _check_slot(k, fn, k.op.outputs.get(slot, ()), value)
        return results

    return checked


def _check_slot(k, fn: Callable, names, value) -> None:
    for name, array in zip(names, value if type(value) is list else [value]):
        shape = getattr(array, "shape", None)   # an array's, or a scalar's; a tensor array has none
        var = None if name == EMPTY_VAR or type(shape) is not tuple else k.block.find_var(name)
        declared = None if var is None else var.shape
        if declared is not None and (len(declared) != len(shape) or any(0 <= d != n for d, n in zip(declared, shape))):
            raise ExecutionError(f"{k.where}: its kernel {fn.__module__}.{fn.__qualname__} computed '{name}' with "
                                 f"shape {list(shape)}, but the program declares {list(declared)} (fix the "
                                 f"kernel, or the op's shape inference)")
