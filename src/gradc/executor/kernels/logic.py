"""Kernels of gradc.ops.logic."""

from __future__ import annotations

import numpy as np

from ...errors import ExecutionError
from . import kernel
from .broadcast import align

COMPARE = {
    "less_than": np.less, "less_equal": np.less_equal, "greater_than": np.greater,
    "greater_equal": np.greater_equal, "equal": np.equal, "not_equal": np.not_equal,
}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}


def _compare(fn):
    return lambda k: {"Out": fn(*align(k.x("X"), k.x("Y"), k.attr("axis")))}


def _logical(fn):
    return lambda k: {"Out": fn(k.x("X"), k.x("Y"))}


for _name, _fn in COMPARE.items():
    kernel(_name)(_compare(_fn))
for _name, _fn in LOGICAL.items():
    kernel(_name)(_logical(_fn))


@kernel("logical_not")
def logical_not(k):
    return {"Out": np.logical_not(k.x("X"))}


@kernel("increment")
def increment(k):
    x = k.x("X")
    step = k.attr("step")
    return {"Out": x + (x.dtype.type(step) if np.issubdtype(x.dtype, np.integer) else step)}


@kernel("assert")
def assert_(k):
    if bool(np.asarray(k.x("Cond")).reshape(-1)[0]):
        return {}
    count = k.attr("summarize")
    shown = [f"{name} {list(np.shape(value))}: {np.asarray(value).reshape(-1)[:None if count < 0 else count]}"
             for name, value in zip(k.op.input("Data"), k.xs("Data"))]
    raise ExecutionError(f"{k.where}: assertion failed: Cond '{k.op.input('Cond')[0]}' is false"
                         + "".join(f"; {line}" for line in shown))
