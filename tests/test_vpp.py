"""Interleaved pipeline chunks (Paddle's VPP schedule): each rank's PIR program of a 2-stage, 2-chunk pipeline, as
Paddle 3.3.1's dist.to_static writes it (tests/data/paddle/vpp, written by tools/paddle_vpp.py; 2 and 4
micro-batches). Both ranks together, in Paddle's own job order (schedule="vpp") or F-then-B, give Paddle's
single-device loss and SGD step on all 8 rows; the order gradc runs is Paddle's job list."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from gradc.errors import ExecutionError, FormatError
from gradc.executor.micro_batches import schedule_order
from gradc.executor.ranks import run_ranks
from gradc.pir.dist import rank_values
from gradc.pir.dump import dumps
from gradc.pir.reader import read_module

DATA = Path(__file__).parent / "data" / "paddle" / "vpp"
META = json.loads((DATA / "meta.json").read_text())


def reference() -> dict[str, np.ndarray]:
    with np.load(DATA / "reference.npz") as archive:
        return dict(archive)


def run_case(case: str, schedule: str, steps: list | None = None):
    """Both ranks over the case's micro-batches: (rank 1's losses, each rank's scope after the step)."""
    ref, ranks = reference(), META["cases"][case]["ranks"]
    programs = [gradc.load(DATA / case / f"rank{rank}" / "train.json") for rank in range(2)]
    scopes, feeds = [], []
    for rank, (program, info) in enumerate(zip(programs, ranks)):
        startup = gradc.Scope()   # the @GRAD@MERGE buffers, zeros
        gradc.Executor().run(gradc.load(DATA / case / f"rank{rank}" / "startup.json"), scope=startup)
        params = {name: ref[f"param.{name.removesuffix('.dist')}"] for name in info["params"]}
        scope = gradc.Scope()
        for name, value in rank_values(program, dict(startup.vars) | params, rank).items():
            scope[name] = np.array(value, copy=True)
        scopes.append(scope)
        rows = {"input0": ref["feed.x"], "label0": ref["feed.label"]}
        feeds.append({name: value for name, value in rows.items() if name in program.global_block.vars})
    rings = {int(ring): group for ring, group in ranks[0]["rings"].items()}
    values = run_ranks(programs, feeds, [[], ["loss_0"]], scopes, rings=rings,
                       micro_batches=META["cases"][case]["micro_batches"], schedule=schedule, schedule_steps=steps)
    return values[1][0], scopes


@pytest.mark.parametrize("schedule", ["vpp", "fthenb"])
@pytest.mark.parametrize("case", ["micro2", "micro4"])
def test_both_ranks_give_paddles_single_device_loss_and_step(case, schedule):
    ref, ranks = reference(), META["cases"][case]["ranks"]
    losses, scopes = run_case(case, schedule)
    assert len(losses) == META["cases"][case]["micro_batches"]
    np.testing.assert_allclose(np.mean(losses), ref["loss"], rtol=1e-6)
    held = set()
    for rank, scope in enumerate(scopes):
        for name in ranks[rank]["kwargs"]:   # the optimizer part zeroes the gradient-merge buffers
            np.testing.assert_array_equal(scope[name], np.zeros_like(scope[name]))
        for name in ranks[rank]["params"]:
            if name in scope.vars and name.removesuffix(".dist") + ".dist@GRAD@MERGE" in ranks[rank]["kwargs"]:
                held.add(name)
                np.testing.assert_allclose(scope[name], ref[f"stepped.{name.removesuffix('.dist')}"], rtol=1e-5,
                                           atol=1e-7, err_msg=f"rank {rank} {name}")
    assert held == set(ranks[0]["params"])   # each of the 8 parameters stepped on the rank of its chunk


@pytest.mark.parametrize("case", ["micro2", "micro4"])
def test_the_order_is_paddles_job_list(case):
    """Paddle's recv_forward / send_backward jobs are the receive and send ops of the chunk's job, run with it."""
    steps = [[], []]
    run_case(case, "vpp", steps)
    for rank, info in enumerate(META["cases"][case]["ranks"]):
        paddles = [tuple(job.split()) for job in info["jobs"]]
        computing = [(job, int(micro)) for job, micro in paddles if job.startswith(("forward", "backward"))]
        assert [step[:2] for step in steps[rank]] == computing, f"rank {rank}"


def test_the_vpp_schedule_needs_chunk_ids_and_enough_micro_batches():
    pipeline = Path(__file__).parent / "data" / "paddle" / "pipeline" / "micro2"
    program = gradc.load(pipeline / "stage0" / "train.pb")   # a legacy pipeline stage: ops without chunk_id
    with pytest.raises(ExecutionError, match=r"rank 0: block 0, op 0 \(\w+\): has no chunk_id, and the VPP"):
        run_ranks([program], [{}], micro_batches=2, schedule="vpp")
    with pytest.raises(ExecutionError, match=r"needs at least as many micro-batches as pipeline stages \(2\), got 1"):
        schedule_order("vpp", 1, stage=0, stages=2, chunks=2)


def test_paddles_file_without_its_kwargs_is_a_one_line_error(tmp_path):
    """As Paddle's writer leaves them out (the tool writes them back): the operands refer to undefined %-k."""
    document = json.loads((DATA / "micro2" / "rank0" / "train.json").read_text())
    document["program"]["regions"][0]["blocks"][0]["kwargs"] = []
    broken = tmp_path / "train.json"
    broken.write_text(json.dumps(document))
    with pytest.raises(FormatError, match=r"op \d+ \(pd_op.add_\): operand 0 refers to block argument %-\d, which the "
                                          r"file does not define \(Paddle 3.3.1's writer leaves"):
        gradc.load(broken)


def test_the_cli_runs_the_vpp_schedule(tmp_path):
    ref, ranks = reference(), META["cases"]["micro4"]["ranks"]
    arguments = []
    for rank, info in enumerate(ranks):
        program = gradc.load(DATA / "micro4" / f"rank{rank}" / "train.json")
        startup = gradc.Scope()
        gradc.Executor().run(gradc.load(DATA / "micro4" / f"rank{rank}" / "startup.json"), scope=startup)
        params = {name: ref[f"param.{name.removesuffix('.dist')}"] for name in info["params"]}
        held = rank_values(program, dict(startup.vars) | params, rank)
        declared = program.global_block.vars
        np.savez(tmp_path / f"params{rank}.npz", **{name: value for name, value in held.items()
                                                    if name in declared and declared[name].persistable})
        rows = {"input0": ref["feed.x"], "label0": ref["feed.label"]}
        np.savez(tmp_path / f"feed{rank}.npz", **{k: v for k, v in rows.items() if k in program.global_block.vars})
        arguments += ["--feed", tmp_path / f"feed{rank}.npz", "--params", tmp_path / f"params{rank}.npz"]
    programs = [DATA / "micro4" / f"rank{rank}" / "train.json" for rank in range(2)]
    result = gradc_cli("run-ranks", *programs, *arguments, "--fetch", "1:loss_0", "--micro-batches", "4",
                       "--schedule", "vpp", "--out", tmp_path / "out.npz")
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "out.npz") as out:
        assert out["rank1/loss_0"].shape == (4,)
        np.testing.assert_allclose(out["rank1/loss_0"].mean(), ref["loss"], rtol=1e-6)


def test_reading_and_writing_keeps_the_kwargs_and_every_op():
    raw = (DATA / "micro2" / "rank0" / "train.json").read_bytes()
    source, written = json.loads(raw), json.loads(dumps(read_module(raw)))
    blocks = [document["program"]["regions"][0]["blocks"][0] for document in (source, written)]
    assert blocks[1]["kwargs"] == blocks[0]["kwargs"] and len(blocks[0]["kwargs"]) == 4
    kept = ("#", "A", "I", "O")
    assert [{key: op.get(key) for key in kept} for op in blocks[1]["ops"]] == [{key: op.get(key) for key in kept}
                                                                                for op in blocks[0]["ops"]]
