"""A pipeline stage's program run over N micro-batches, as Paddle's SectionWorker schedules it: the ops are sorted by
their op_role into forward (Forward, Forward|Loss), learning-rate (LRSched: the first micro-batch only), backward
(Backward, Backward|Loss) and update (Optimize) ops; each micro-batch runs the forward and backward ops in a scope of
its own (a child of the rank's scope, which holds the persistable vars: parameters, accumulated gradients) fed its
part of the feed (split along axis 0), and the update ops run once, in the last micro-batch's scope.

SectionWorker (paddle/fluid/framework/section_worker.cc) runs all forwards then all backwards (F-then-B, its
schedule_mode 0) or, with schedule_mode 1, 1F1B: stage s of S first runs S - s - 1 forwards, then a forward and a
backward in turn, then the remaining backwards. The results are the same: each micro-batch has its own scope, the
backward ops write the persistable accumulators in micro-batch order either way, and a send never waits
(gradc.executor.ranks), so neither order can deadlock. What differs is memory: a micro-batch's activations die with
its backward (its scope keeps only the fetched vars), and 1F1B holds at most S - s micro-batches' at once. The
"vpp" schedule runs interleaved chunks' jobs in Paddle's order (gradc.executor.virtual_stages).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import ExecutionError, op_location
from ..ir import Program
from .feeding import feed_values
from .virtual_stages import chunk_jobs, vpp_order

FORWARD, BACKWARD, OPTIMIZE, LR_SCHED, LOSS = 0, 1, 2, 16, 256
PHASE_OF_ROLE = {FORWARD: "forward", FORWARD | LOSS: "forward", LR_SCHED: "lr", BACKWARD: "backward",
                 BACKWARD | LOSS: "backward", OPTIMIZE: "update"}
SCHEDULES = ("fthenb", "1f1b", "vpp")
PHASES = {"first": ("lr", "forward"), "forward": ("forward",), "backward": ("backward",), "update": ("update",)}


def phases(program: Program, schedule: str = "fthenb") -> dict[str, Program]:
    """The program's block 0 split by op_role: phase -> a copy of the program holding its ops, in program order
    ("first": the first micro-batch's learning-rate and forward ops); with the "vpp" schedule, each chunk's forward
    and backward ops apart ("forward<c>", "backward<c>", gradc.executor.virtual_stages) and the update ops."""
    roles = []
    for idx, op in enumerate(program.global_block.ops):
        role = op.attrs.get("op_role")
        if role not in PHASE_OF_ROLE:
            problem = ("has no op_role (Paddle's PIR translation drops it: run the legacy program)" if role is None
                       else f"op_role {role} is none of LRSched, Forward, Backward or Optimize")
            raise ExecutionError(f"{op_location(0, idx, op.type)}: {problem}, and a pipeline stage runs over "
                                 f"micro-batches by its ops' op_role (as Paddle's SectionWorker)")
        roles.append(PHASE_OF_ROLE[role])
    keys, groups = chunk_jobs(program, roles) if schedule == "vpp" else (roles, PHASES)
    split = {}
    for phase, kept in groups.items():
        copy = program.clone()
        copy.global_block.ops = [op for op, key in zip(copy.global_block.ops, keys) if key in kept]
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


def schedule_order(schedule: str, count: int, stage: int = 0, stages: int = 1,
                   chunks: int = 1) -> list[tuple[str, int]]:
    """The (phase, micro-batch) steps a stage runs in: F-then-B, 1F1B as SectionWorker::Run1F1B orders them, or
    Paddle's VPP job list over ``chunks`` chunks (phases "forward<c>", "backward<c>")."""
    if schedule not in SCHEDULES:
        raise ExecutionError(f"schedule '{schedule}' is none of {', '.join(SCHEDULES)}")
    if schedule == "vpp":
        return vpp_order(count, stage, stages, chunks)
    if schedule == "fthenb":
        return [("forward", micro) for micro in range(count)] + [("backward", micro) for micro in range(count)]
    warmup = stages - stage - 1
    if count <= warmup:
        raise ExecutionError(f"1F1B at pipeline stage {stage} of {stages} runs {warmup} forward(s) before its first "
                             f"backward and needs more micro-batches than that, got {count} (as Paddle's "
                             f"SectionWorker)")
    order = [("forward", micro) for micro in range(warmup)]
    for micro in range(warmup, count):
        order += [("forward", micro), ("backward", micro - warmup)]
    return order + [("backward", micro) for micro in range(count - warmup, count)]


def live_bytes(scopes) -> int:
    """The bytes of the arrays the micro-batch scopes hold (their activations and gradients)."""
    return sum(value.nbytes for scope in scopes for value in scope.vars.values() if isinstance(value, np.ndarray))


def run_micro_batches(executor, program: Program, feed: Mapping[str, object], fetch_list: Sequence[str], scope,
                      count: int, schedule: str = "fthenb", stage: int = 0, stages: int = 1,
                      steps: list | None = None) -> list[list]:
    """Run ``program`` (pipeline stage ``stage`` of ``stages``) over ``count`` micro-batches of ``feed`` in ``scope``
    in the ``schedule``'s order ("fthenb", "1f1b" or "vpp"); return each fetched var's values, a list of one value a
    micro-batch (a persistable var's: its value after the update, in each). ``steps``, when given, gets
    (phase, micro-batch, bytes the micro-batch scopes hold after it) for each step run."""
    split, feeds = phases(program, schedule), split_feed(feed, count)
    chunks = sum(1 for key in split if key.startswith("forward") and key != "forward")
    order = schedule_order(schedule, count, stage, stages, chunks)
    last_backward = "backward0" if schedule == "vpp" else "backward"   # VPP runs a micro-batch's chunks V-1 -> 0
    scopes = [scope.child() for _ in range(count)]
    kept, fed = set(fetch_list), set()
    # a fetched persistable var a micro-batch writes (PIR's shadow_output of the loss) lands in the rank's scope:
    # each micro-batch keeps its own value of it, as Paddle's job of that micro-batch fetches it
    own = {key: kept & {name for op in part.global_block.ops for names in op.outputs.values() for name in names
                        if getattr(program.global_block.vars.get(name), "persistable", False)}
           for key, part in split.items()}
    for phase, micro in order:
        if phase.startswith("forward") and micro not in fed:
            feed_values(program.global_block, feeds[micro], scopes[micro])
            fed.add(micro)
        key = "first" if phase == "forward" and micro == 0 else phase
        executor.run_block(split[key].global_block, scopes[micro], scope)
        for name in own[key]:
            if scope.vars.get(name) is not None:
                scopes[micro].vars[name] = np.array(scope.vars[name], copy=True)
        if phase == last_backward and micro < count - 1:   # the last micro-batch's scope runs the update
            scopes[micro].vars = {name: value for name, value in scopes[micro].vars.items() if name in kept}
        if steps is not None:
            steps.append((phase, micro, live_bytes(scopes)))
    executor.run_block(split["update"].global_block, scopes[-1], scope)
    values = []
    for name in fetch_list:
        if scopes[-1].find(name) is None:
            raise ExecutionError(f"fetch var '{name}' has no value after the run: no op wrote it and it was not fed")
        values.append([micro_scope.find(name) for micro_scope in scopes])
    return values
