"""Value statistics for the viewer (`gradc view --feed/--params`): block 0 runs once, nothing freed, and
each numeric value it holds afterwards is summarised (min, max, mean, NaN count)."""

from __future__ import annotations

import numpy as np

from ..executor import Executor, Scope
from ..executor.feeding import feed_values
from ..ir import Program


def summary(value) -> list | None:
    """[min, max, mean, NaN count, dtype, shape] of a numeric array (None for anything else)."""
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
        return None
    shape = list(value.shape)
    if value.size == 0:
        return [None, None, None, 0, value.dtype.name, shape]
    data = value.astype(np.float64) if value.dtype.kind == "f" else value
    finite = data[np.isfinite(data)] if value.dtype.kind == "f" else data
    nan = int(np.isnan(data).sum()) if value.dtype.kind == "f" else 0
    if finite.size == 0:
        return [None, None, None, nan, value.dtype.name, shape]
    return [float(finite.min()), float(finite.max()), float(finite.mean()), nan, value.dtype.name, shape]


def value_stats(program: Program, feed: dict, params: dict, startups: list[Program] = (),
                check=None) -> dict[str, list]:
    """Statistics of every value block 0 holds after one run (feeds, parameters, every var it wrote); ``check(scope,
    feed)`` may refuse the run first (the CLI's one line for values neither given nor initialised)."""
    executor, scope = Executor(), Scope()
    for startup in startups:
        executor.run(startup, scope=scope)
    for name, value in params.items():
        scope[name] = value
    if check is not None:
        check(scope, feed)
    local = scope.child()
    feed_values(program.global_block, feed, local)
    executor.run_block(program.global_block, local, scope)
    stats = {}
    for holder in (scope, local):
        for name, value in holder.vars.items():
            found = summary(value)
            if found is not None:
                stats[name] = found
    return stats
