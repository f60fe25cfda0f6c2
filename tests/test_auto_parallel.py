"""Semi-auto-parallel PIR programs as Paddle 3.3.1's dist.to_static writes them (tests/data/paddle/auto_parallel,
made by tools/paddle_auto_parallel.py): dist types and op_dist_attr on every value and op, the reshard pass's
collectives. gradc reads each rank's part from the dist types, and all ranks run together give the single-device
model's loss and Momentum step (column- and row-parallel Linears, the batch split over the data-parallel axis)."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.executor.ranks import run_ranks
from gradc.pir.dist import spread

DATA = Path(__file__).parent / "data" / "paddle" / "auto_parallel"


def reference() -> dict:
    with np.load(DATA / "reference.npz") as archive:
        return dict(archive)


def rings(case: dict) -> dict[int, list[list[int]]]:
    """ring_id -> its groups, from each rank's process groups (a ring_id names a communicator of each process)."""
    groups: dict[int, list[list[int]]] = {}
    for info in case["ranks"]:
        for ring, ranks in info["rings"].items():
            if ranks not in groups.setdefault(int(ring), []):
                groups[int(ring)].append(ranks)
    return groups


def rank_part(program: gradc.Program, name: str, value, rank: int) -> np.ndarray:
    return spread(program.global_block.vars[name].dist).local_part(value, rank)


@pytest.mark.parametrize("case_name", ["dp_mp", "shared"])
def test_every_rank_together_gives_the_single_device_loss_and_step(case_name):
    ref, case = reference(), json.loads((DATA / "meta.json").read_text())["cases"][case_name]
    count = len(case["ranks"])
    programs = [gradc.load(DATA / case_name / f"rank{rank}" / "train.json") for rank in range(count)]
    scopes, feeds = [], []
    for rank, (program, info) in enumerate(zip(programs, case["ranks"])):
        scope = gradc.Scope()
        gradc.Executor().run(gradc.load(DATA / case_name / f"rank{rank}" / "startup.json"), scope=scope)
        for name in info["params"]:   # linear_0.w_0.dist: this rank's block of linear_0.w_0
            scope[name] = rank_part(program, name, ref[f"param.{name.removesuffix('.dist')}"], rank).copy()
        scopes.append(scope)
        feeds.append({"input0": rank_part(program, "input0", ref["feed.x"], rank),
                      "label0": rank_part(program, "label0", ref["feed.label"], rank)})
    values = run_ranks(programs, feeds, ["loss_0"], scopes, rings=rings(case))
    np.testing.assert_allclose(np.mean([loss for loss, in values]), ref["loss"], rtol=1e-6)
    for rank, (program, scope) in enumerate(zip(programs, scopes)):
        for name in case["ranks"][rank]["params"]:
            stepped = rank_part(program, name, ref[f"stepped.{name.removesuffix('.dist')}"], rank)
            np.testing.assert_allclose(scope[name], stepped, rtol=1e-5, atol=1e-7)
