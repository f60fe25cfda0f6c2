"""The 1F1B order of Paddle's SectionWorker (schedule_mode 1): the stages of tests/data/paddle/pipeline/micro2 run
in it give F-then-B's results (and so Paddle's single-device numbers), in another order of steps, holding fewer
micro-batches' activations at once."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from gradc.errors import ExecutionError
from gradc.executor.micro_batches import schedule_order
from gradc.executor.ranks import run_ranks
from test_pipeline import reference, stage_scope

DATA = Path(__file__).parent / "data" / "paddle" / "pipeline"
STAGES = DATA / "micro2"


def run(schedule: str, feeds: list[dict], count: int):
    """Both stages over ``count`` micro-batches: (rank 1's losses, every stage's scope, every stage's steps)."""
    meta = json.loads((DATA / "meta.json").read_text())
    programs = [gradc.load(STAGES / f"stage{stage}" / "train.pb") for stage in (0, 1)]
    scopes = [stage_scope(stage, reference(), STAGES) for stage in (0, 1)]
    steps = [[], []]
    values = run_ranks(programs, feeds, [[], [meta["loss"]]], scopes, micro_batches=count, schedule=schedule,
                       schedule_steps=steps)
    return values[1][0], scopes, steps


def eight_rows() -> list[dict]:
    """The reference's 4 rows and 4 more: 4 micro-batches of the fixture's 2 rows."""
    ref, rng = reference(), np.random.default_rng(3)
    x = np.concatenate([ref["feed.x"], rng.normal(size=ref["feed.x"].shape).astype(ref["feed.x"].dtype)])
    label = np.concatenate([ref["feed.label"], ref["feed.label"][::-1]])
    return [{"x": x}, {"label": label}]


def test_the_order_is_section_workers():
    assert schedule_order("1f1b", 4, stage=0, stages=2) == [
        ("forward", 0), ("forward", 1), ("backward", 0), ("forward", 2), ("backward", 1), ("forward", 3),
        ("backward", 2), ("backward", 3)]
    assert schedule_order("1f1b", 3, stage=1, stages=3) == [
        ("forward", 0), ("forward", 1), ("backward", 0), ("forward", 2), ("backward", 1), ("backward", 2)]
    assert schedule_order("1f1b", 2, stage=1, stages=2) == [
        ("forward", 0), ("backward", 0), ("forward", 1), ("backward", 1)]
    assert schedule_order("fthenb", 2) == [("forward", 0), ("forward", 1), ("backward", 0), ("backward", 1)]
    with pytest.raises(ExecutionError, match=r"1F1B at pipeline stage 0 of 3 runs 2 forward\(s\) before its first "
                                             r"backward and needs more micro-batches than that, got 2"):
        schedule_order("1f1b", 2, stage=0, stages=3)


def test_1f1b_gives_paddles_single_device_numbers():
    ref, meta = reference(), json.loads((DATA / "meta.json").read_text())
    losses, scopes, _ = run("1f1b", [{"x": ref["feed.x"]}, {"label": ref["feed.label"]}], 2)
    np.testing.assert_allclose(np.mean(losses), ref["loss"], rtol=1e-6)
    for stage, scope in enumerate(scopes):
        for name in meta["stages"][str(stage)]["params"]:
            np.testing.assert_allclose(scope[f"{name}@GRAD@MERGED"], ref[f"grad.{name}"], rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(scope[name], ref[f"stepped.{name}"], rtol=1e-5, atol=1e-7)


def test_1f1b_equals_f_then_b_in_another_order_with_fewer_live_activations():
    meta = json.loads((DATA / "meta.json").read_text())
    one_f_one_b, f_then_b = run("1f1b", eight_rows(), 4), run("fthenb", eight_rows(), 4)
    np.testing.assert_array_equal(np.stack(one_f_one_b[0]), np.stack(f_then_b[0]))
    for stage in (0, 1):
        for name in meta["stages"][str(stage)]["params"]:
            for var in (name, f"{name}@GRAD@MERGED"):
                np.testing.assert_array_equal(one_f_one_b[1][stage][var], f_then_b[1][stage][var])
        order = [step[:2] for step in one_f_one_b[2][stage]]
        assert order == schedule_order("1f1b", 4, stage, 2) != [step[:2] for step in f_then_b[2][stage]]
    # the activations peak after a forward; a backward frees its micro-batch's (but the last's, which the update uses)
    peaks = {name: [max(held for phase, _, held in steps if phase == "forward") for steps in result[2]]
             for name, result in (("1f1b", one_f_one_b), ("fthenb", f_then_b))}
    per_micro_batch = [steps[0][2] for steps in one_f_one_b[2]]   # after the first forward
    assert peaks["fthenb"] == [4 * size for size in per_micro_batch]
    kept_losses = 3 * np.asarray(one_f_one_b[0][0]).nbytes   # the fetched loss outlives its micro-batch
    assert peaks["1f1b"] == [2 * per_micro_batch[0], per_micro_batch[1] + kept_losses]


def test_the_cli_takes_the_schedule(tmp_path):
    ref, meta = reference(), json.loads((DATA / "meta.json").read_text())
    np.savez(tmp_path / "feed0.npz", x=ref["feed.x"])
    np.savez(tmp_path / "feed1.npz", label=ref["feed.label"])
    for stage in (0, 1):
        np.savez(tmp_path / f"params{stage}.npz", **dict(stage_scope(stage, ref, STAGES).vars))
    programs = [STAGES / f"stage{stage}" / "train.pb" for stage in (0, 1)]
    result = gradc_cli("run-ranks", *programs, "--feed", tmp_path / "feed0.npz", "--feed", tmp_path / "feed1.npz",
                       "--params", tmp_path / "params0.npz", "--params", tmp_path / "params1.npz",
                       "--fetch", f"1:{meta['loss']}", "--micro-batches", "2", "--schedule", "1f1b",
                       "--out", tmp_path / "out.npz")
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out[f"rank1/{meta['loss']}"].mean(), ref["loss"], rtol=1e-6)
