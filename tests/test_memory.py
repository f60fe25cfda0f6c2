"""gradc show --memory: the static estimate of a step's peak is within 20% of the peak tracemalloc measures
while the executor runs the MLP, CNN and transformer fixtures (their batch made unknown, run 16 and 64 times
larger, so arrays rather than the interpreter's own objects dominate); gradc run --profile reports per op
type."""

import json
import tracemalloc

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.memory import estimate
from rebatch import rebatch, tile_feed


def measured_peak(program, feed, params, fetch) -> int:
    """tracemalloc's peak over one run whose parameters and inputs are allocated inside the measurement (as
    gradc run reads them); the plan is made by a run before, as in training."""
    executor = gradc.Executor()
    warm = gradc.Scope()
    for name, value in params.items():
        warm[name] = value.copy()
    executor.run(program, {k: v.copy() for k, v in feed.items()}, fetch, warm)
    tracemalloc.start()
    try:
        scope = gradc.Scope()
        for name, value in params.items():
            scope[name] = value.copy()
        executor.run(program, {k: v.copy() for k, v in feed.items()}, fetch, scope)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("case", ["mlp", "conv", "transformer"])
def test_estimate_within_20_percent_of_tracemalloc(case):
    meta = json.loads((DATA / case / "meta.json").read_text())
    with np.load(DATA / case / "feed.npz") as f, np.load(DATA / case / "params.npz") as p:
        feed, params = dict(f), dict(p)
    batch = next(iter(feed.values())).shape[0]
    program = rebatch(gradc.load(DATA / case / "forward.pb"), batch)
    gradc.append_backward(program, meta["loss"])
    assert not gradc.verify(program)
    for factor in (16, 64):
        measured = measured_peak(program, tile_feed(feed, factor), params, [meta["loss"]])
        estimated = estimate(program, batch * factor, frozenset([meta["loss"]]))[0].peak
        assert 0.8 <= estimated / measured <= 1.2, (case, factor, estimated, measured)


def test_estimate_parts_and_batch_size():
    program = gradc.load(DATA / "mlp" / "backward.pb")
    block = estimate(program, 1)[0]
    params = sum(np.load(DATA / "mlp" / "params.npz")[k].nbytes for k in ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0",
                                                                         "fc_1.b_0"))
    assert block.parameters == params and block.optimizer_state == 0
    assert block.inputs == 32 * 16 * 4 + 32 * 8   # x float32 [32, 16], label int64 [32, 1]
    # what the grad ops read of the forward's values: fc_0.tmp_0 and fc_0.tmp_2 [32, 32], fc_1.tmp_0 and the
    # softmax [32, 10], the per-sample loss [32, 1], all float32 (x, the label and the weights are not written)
    assert block.activations == 4 * (2 * 32 * 32 + 2 * 32 * 10 + 32)
    rebatched = rebatch(program, 32)
    small, large = estimate(rebatched, 32)[0], estimate(rebatched, 320)[0]
    assert large.parameters == small.parameters and large.peak_temporaries > 9 * small.peak_temporaries


def test_show_memory_and_run_profile_cli():
    shown = gradc_cli("show", DATA / "conv" / "backward.pb", "--memory", "--batch-size", "8")
    assert shown.returncode == 0, shown.stderr
    assert "unknown dims = batch size 8" in shown.stdout and "kept for the backward" in shown.stdout
    assert "at op" in shown.stdout and "conv2d_grad" in shown.stdout
    case = DATA / "conv"
    ran = gradc_cli("run", case / "backward.pb", "--feed", case / "feed.npz", "--params", case / "params.npz",
                    "--profile")
    assert ran.returncode == 0, ran.stderr
    rows = {line.split()[0]: line.split() for line in ran.stdout.splitlines()
            if line and line.split()[0].isidentifier()}
    program = gradc.load(case / "backward.pb")
    counts = {}
    for op in program.global_block.ops:
        counts[op.type] = counts.get(op.type, 0) + 1
    for op_type, calls in counts.items():
        if op_type not in ("feed", "fetch"):
            assert int(rows[op_type][1]) == calls, op_type
    assert "kernel calls" in ran.stdout


def test_profile_restores_the_kernels_and_nests_control_flow():
    from gradc.executor import KERNELS
    from gradc.profile import profiling

    before = dict(KERNELS)
    case = DATA / "while_loop"
    program = gradc.load(case / "backward.pb")
    with np.load(case / "feed.npz") as f, np.load(case / "params.npz") as p:
        feed, scope = dict(f), gradc.Scope()
        for name in p.files:
            scope[name] = p[name]
    with profiling() as profile:
        gradc.Executor().run(program, feed, [], scope)
    assert KERNELS == before
    loop, body = profile.by_type["while"], profile.by_type["tanh"]
    assert loop.calls == 1 and body.calls >= 2 and loop.seconds >= body.seconds and loop.peak >= body.peak
