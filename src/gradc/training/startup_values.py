"""A parameter file's values and the startup programs of one run: the file's values are in the scope before the
startups run, so that what a startup derives from a parameter (paddle.static.amp O2's float32 master weights, cast
from the parameters; LookAhead's slow weights) reads them, and are put back after the startups' initialisers, the
ops that derive from them run again then."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from ..executor import Executor, Scope
from ..io import load
from ..ir import Program
from ..pairing import SHAPE_READERS


def preloaded(values: Mapping[str, np.ndarray], scope: Scope | None = None) -> Scope:
    """``scope`` (or a new one) holding ``values``, for the startup programs to run in (read_files fitted them to the
    program's vars: not checked again against a startup's declarations, which an AMP startup's forward half gives in
    float32)."""
    scope = Scope() if scope is None else scope
    scope.vars.update(values)
    return scope


def load_after_startups(executor: Executor, scope: Scope, startups: Sequence[Program | str | os.PathLike],
                        values: Mapping[str, np.ndarray]) -> None:
    """Put ``values`` back into ``scope`` after the startups ran in it, and run again each startup op that computes
    from them (or from what such an op wrote) but writes none of them: its value is then that of the loaded
    parameters, not of the startups' initialisers. Ops that read only a shape (fill_any_like, a *_batch_size_like
    draw) keep what they wrote."""
    scope.vars.update(values)
    given, derived = set(values), set(values)
    for startup in startups:
        program = (startup if isinstance(startup, Program) else load(startup, lazy=False)).clone()
        block = program.global_block
        again = []
        for op in block.ops:
            if op.type not in SHAPE_READERS and derived & set(op.input_names()) and not given & set(op.output_names()):
                again.append(op)
                derived.update(op.output_names())
        if again:
            block.ops = again
            program.mark_changed()
            executor.run(program, scope=scope)
