"""Interleaved pipeline chunks (virtual pipeline stages, Paddle's "VPP" schedule): a rank's program holds V chunks
of the model, each op marked with its chunk_id (auto-parallel's complete_chunk_id deals layers out round robin:
stage s holds chunks s, S + s, ...). Paddle's pipeline pass (paddle/distributed/passes/pipeline_scheduler_pass/
pipeline_vpp.py, its PIR job list) runs each chunk's forward ops and backward ops as jobs of their own, per
micro-batch: a warm-up of forwards, then a backward and a forward in turn, then the remaining backwards, the
micro-batches taken S at a time through the chunks (forwards chunk 0 -> V-1, backwards V-1 -> 0).

gradc runs the same jobs in the same order (its recv_forward and send_backward jobs are the chunk's own receive and
send ops, run with it: a send never waits in gradc.executor.ranks, so that order cannot deadlock). Each micro-batch
keeps its scope as in gradc.executor.micro_batches; the results are those of F-then-B, the order is Paddle's.
"""

from __future__ import annotations

import json

from ..errors import ExecutionError, op_location
from ..ir import Program


def chunk_of(op) -> int | None:
    """The chunk an op belongs to: its op_dist_attr's chunk_id (the PIR reader keeps the attribute as JSON text),
    None without one or with -1 (none)."""
    text = op.attrs.get("op_dist_attr")
    if not isinstance(text, str):
        return None
    document = json.loads(text)["D"]
    chunk = document[3] if len(document) > 3 else None
    return chunk if isinstance(chunk, int) and chunk >= 0 else None


def chunk_jobs(program: Program, roles: list[str]) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """Each op's job ("forward<c>" / "backward<c>": its chunk's forward / backward ops; "update") from ``roles``
    (each op's phase, as gradc.executor.micro_batches.phases sorts them), and the jobs: every chunk's forward and
    backward, empty where the chunk has none, and the update."""
    keys = []
    for idx, (op, role) in enumerate(zip(program.global_block.ops, roles)):
        if role == "lr":
            raise ExecutionError(f"{op_location(0, idx, op.type)}: a learning-rate (LRSched) op in a program run "
                                 f"with the VPP schedule, which has no job for it (Paddle's neither)")
        chunk = chunk_of(op)
        if role != "update" and chunk is None:
            raise ExecutionError(f"{op_location(0, idx, op.type)}: has no chunk_id, and the VPP schedule runs each "
                                 f"chunk's ops as a job of their own (Paddle's complete_chunk_id marks every op)")
        keys.append(role if role == "update" else f"{role}{chunk}")
    chunks = 1 + max((int(key.removeprefix("forward")) for key in keys if key.startswith("forward")), default=0)
    jobs = [f"{role}{chunk}" for chunk in range(chunks) for role in ("forward", "backward")] + ["update"]
    return keys, {job: (job,) for job in jobs}


def vpp_order(count: int, stage: int, stages: int, chunks: int) -> list[tuple[str, int]]:
    """The (job, micro-batch) steps stage ``stage`` of ``stages`` runs with ``chunks`` chunks over ``count``
    micro-batches, as Paddle's PIR VPP job list orders them (backward not split into _b / _w)."""
    if count < stages:
        raise ExecutionError(f"the VPP schedule needs at least as many micro-batches as pipeline stages ({stages}), "
                             f"got {count} (Paddle asserts accumulate_steps >= num_stages)")
    remainder, group = count % stages, stages * chunks
    counters = {"forward": [0] * chunks, "backward": [0] * chunks}

    def step(role: str, micro_step: int) -> tuple[str, int]:
        chunk = micro_step % group
        chunk = chunk // stages if micro_step <= (count // stages) * group else chunk // remainder
        if role == "backward":
            chunk = chunks - chunk - 1
        micro = counters[role][chunk]
        counters[role][chunk] += 1
        return f"{role}{chunk}", micro

    total = count * chunks
    warmup = total if count == stages else min((stages - stage - 1) * 2 + (chunks - 1) * stages, total)
    warmup = min(total, warmup + 1)
    order = [step("forward", micro_step) for micro_step in range(warmup)]
    for micro_step in range(total - warmup):
        forward = step("forward", micro_step + warmup)
        order += [step("backward", micro_step), forward]
    return order + [step("backward", micro_step) for micro_step in range(total - warmup, total)]
