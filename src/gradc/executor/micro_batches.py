"""A pipeline stage's program run over N micro-batches, as Paddle's SectionWorker schedules it: the ops are sorted by
their op_role into forward (Forward, Forward|Loss), learning-rate (LRSched: the first micro-batch only), backward
(Backward, Backward|Loss) and update (Optimize) ops; each micro-batch runs the forward and backward ops in a scope of
its own (a child of the rank's scope, which holds the persistable vars: parameters, accumulated gradients) fed its
part of the feed (split along axis 0), and the update ops run once, in the last micro-batch's scope.

SectionWorker runs all forwards then all backwards (F-then-B) or interleaves them (1F1B); gradc runs F-then-B. The
results are the same: each micro-batch has its own scope, the backward ops write the persistable accumulators in
micro-batch order either way, and a send never waits (gradc.executor.ranks), so neither order can deadlock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import ExecutionError, op_location
from ..ir import Program
from .feeding import feed_values

FORWARD, BACKWARD, OPTIMIZE, LR_SCHED, LOSS = 0, 1, 2, 16, 256
PHASE_OF_ROLE = {FORWARD: "forward", FORWARD | LOSS: "forward", LR_SCHED: "lr", BACKWARD: "backward",
                 BACKWARD | LOSS: "backward", OPTIMIZE: "update"}
PHASES = {"first": ("lr", "forward"), "forward": ("forward",), "backward": ("backward",), "update": ("update",)}


def phases(program: Program) -> dict[str, Program]:
    """The program's block 0 split by op_role: phase -> a copy of the program holding its ops, in program order
    ("first": the first micro-batch's learning-rate and forward ops)."""
    roles = []
    for idx, op in enumerate(program.global_block.ops):
        role = op.attrs.get("op_role")
        if role not in PHASE_OF_ROLE:
            problem = ("has no op_role (Paddle's PIR translation drops it: run the legacy program)" if role is None
                       else f"op_role {role} is none of LRSched, Forward, Backward or Optimize")
            raise ExecutionError(f"{op_location(0, idx, op.type)}: {problem}, and a pipeline stage runs over "
                                 f"micro-batches by its ops' op_role (as Paddle's SectionWorker)")
        roles.append(PHASE_OF_ROLE[role])
    split = {}
    for phase, kept in PHASES.items():
        copy = program.clone()
        copy.global_block.ops = [op for op, role in zip(copy.global_block.ops, roles) if role in kept]
        split[phase] = copy
    return split


def split_feed(feed: Mapping[str, object], count: int) -> list[dict]:
    """Each micro-batch's feed: every fed value's rows split into ``count`` equal parts (as Paddle's executor)."""
    parts = [{} for _ in range(count)]
    for name, value in feed.items():
        array = np.asarray(value)
        if array.ndim == 0 or array.shape[0] % count:
            raise ExecutionError(f"feed var '{name}' of shape {list(array.shape)} does not split into {count} "
                                 f"micro-batches of equal rows")
        for part, rows in zip(parts, np.split(array, count)):
            part[name] = rows
    return parts


def run_micro_batches(executor, program: Program, feed: Mapping[str, object], fetch_list: Sequence[str], scope,
                      count: int) -> list[list]:
    """Run ``program`` (a pipeline stage) over ``count`` micro-batches of ``feed`` in ``scope``; return each fetched
    var's values, a list of one value a micro-batch (a persistable var's: its value after the update, in each)."""
    split, feeds = phases(program), split_feed(feed, count)
    scopes = [scope.child() for _ in range(count)]
    for micro, micro_scope in enumerate(scopes):
        feed_values(program.global_block, feeds[micro], micro_scope)
        executor.run_block(split["first" if micro == 0 else "forward"].global_block, micro_scope, scope)
    for micro_scope in scopes:
        executor.run_block(split["backward"].global_block, micro_scope, scope)
    executor.run_block(split["update"].global_block, scopes[-1], scope)
    values = []
    for name in fetch_list:
        if scopes[-1].find(name) is None:
            raise ExecutionError(f"fetch var '{name}' has no value after the run: no op wrote it and it was not fed")
        values.append([micro_scope.find(name) for micro_scope in scopes])
    return values
