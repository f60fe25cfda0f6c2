"""Kernel of py_func: calls the function registered under its forward_callable_id (gradc.register_py_func)."""

from __future__ import annotations

import numpy as np

from ...ir import EMPTY_VAR
from ..py_funcs import PY_FUNCS
from . import kernel


@kernel("py_func")
def py_func(k):
    callable_id = k.attr("forward_callable_id")
    fn = PY_FUNCS.get(callable_id)
    if fn is None:
        raise ValueError(f"Python function {callable_id}, of the process that built the program, is not registered: "
                         f"register it first, gradc.register_py_func({callable_id}, fn) (in a --plugin module for "
                         f"the CLI)")
    returned = fn(*k.xs("X"))
    returned = list(returned) if isinstance(returned, (list, tuple)) else [returned]
    names = k.out_names("Out")
    if len(returned) != len(names):
        raise ValueError(f"Python function {callable_id} returned {len(returned)} value(s) for the {len(names)} "
                         f"var(s) of Out")
    outputs = []
    for position, (name, value) in enumerate(zip(names, returned)):
        if value is None and name != EMPTY_VAR:
            raise ValueError(f"Python function {callable_id} returned None for Out var {position} ('{name}')")
        outputs.append(None if name == EMPTY_VAR else np.asarray(value))
    return {"Out": outputs}
