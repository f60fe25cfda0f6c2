"""Data-dependent initialisation: programs run once on the first batch of a training run, after its startup programs
and parameter files and before its first step (Glow's actnorm set from the batch's mean and deviation, weight
normalisation's init), as a Paddle user runs exe.run(init_program, feed=first_batch) before the training loop."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..errors import ExecutionError, GradcError, ProgramError
from ..executor import Executor, Scope
from ..io import load
from .data import Dataset, OneBatch


def set_from_data(block) -> list[str]:
    """The persistable tensors an op of ``block`` writes without reading them (what an initialiser sets; an in-place
    update, batch norm's running mean, reads what it writes), in order of first writing."""
    names = []
    for op in block.ops:
        for name in op.output_names():
            var = block.find_var(name)
            if (var is not None and var.persistable and var.dtype is not None   # not the fetch list
                    and name not in op.input_names() and name not in names):
                names.append(name)
    return names


def run_on_first_batch(executor: Executor, scope: Scope, paths: Sequence[str | os.PathLike],
                       data: Dataset | OneBatch, batch_size: int, shuffle: bool = False, seed: int = 0,
                       drop_last: bool = False) -> list[str]:
    """Run each program of ``paths`` in ``scope`` on the batch the first step is to see; the persistable vars they
    wrote. A program that writes no persistable var initialises nothing: refused, as is one that fails."""
    initialised, first = [], next(iter(data.batches(0, batch_size, shuffle, seed, drop_last)))
    for path in paths:
        program = load(path, lazy=False)
        wrote = set_from_data(program.global_block)
        try:
            if not wrote:
                raise GradcError("it writes no persistable var, so initialises nothing (paddle.assign(value, "
                                 "parameter) writes one)")
            executor.run(program, {name: value for name, value in first.items()    # labels it does not read
                                   if program.global_block.find_var(name) is not None}, [], scope)
        except (ExecutionError, ProgramError, GradcError) as exc:
            raise type(exc)(f"--data-init program '{path}': {exc}") from None
        initialised += [name for name in wrote if name not in initialised]
    return initialised
