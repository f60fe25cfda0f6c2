"""The Python functions py_func ops call, by the id the program holds (paddle.static.py_func numbers a process's
functions from 0 in the order it registers them: a forward function, then its backward function if any)."""

from __future__ import annotations

from collections.abc import Callable

PY_FUNCS: dict[int, Callable] = {}


def register_py_func(callable_id: int, fn: Callable | None) -> None:
    """Have py_func ops whose forward_callable_id is ``callable_id`` call ``fn`` (None: forget the id). ``fn`` gets
    the op's X arrays in order and returns an array (or a tuple of them) per var of its Out, as Paddle's does."""
    if fn is None:
        PY_FUNCS.pop(callable_id, None)
    elif not callable(fn):
        raise TypeError(f"register_py_func: {fn!r} is not callable")
    else:
        PY_FUNCS[int(callable_id)] = fn
