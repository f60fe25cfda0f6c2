"""A sequence modeller's week (docs/tools.md): an LSTM forecaster given sequence lengths, a conv+GRU CTC model, a
teacher-forced GRU seq2seq and a GRU greedy decoder in a while loop, built and trained by Paddle 3.3.1
(tools/paddle_user_week11.py: Paddle's losses and tokens), trained and run here; each fault found, as the behaviour
it has now."""

import json
import tracemalloc

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc import optimizers
from gradc.memory import estimate

WEEK = DATA / "user_week11"
CLIPS = {"forecaster": optimizers.ClipGradByGlobalNorm(1.0), "ctc": optimizers.ClipGradByNorm(1.0),
         "seq2seq": optimizers.ClipGradByGlobalNorm(1.0)}
TIME_AXIS = {"forecaster": ("x", 1), "ctc": ("feats", 2), "seq2seq": ("tgt_in", 1)}


def _trained_program(case: str):
    meta = json.loads((WEEK / case / "meta.json").read_text())
    program = gradc.load(WEEK / case / "forward.pb")
    startup = optimizers.Adam(learning_rate=0.01, grad_clip=CLIPS[case]).minimize(program, loss=meta["loss"])
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(startup, scope=scope)
    gradc.load_params(scope, WEEK / case / "init.npz", program, strict=True)
    return meta, program, scope, executor


def _batch(case: str, step: int, meta: dict) -> dict:
    with np.load(WEEK / case / "batches.npz") as batches:
        return {name: batches[f"{name}{step}"] for name in meta["feeds"]}


@pytest.mark.parametrize("case", ["forecaster", "ctc", "seq2seq"])
def test_sequence_models_train_to_paddles_losses_with_another_length_each_step_and_no_replanning(case):
    meta, program, scope, executor = _trained_program(case)
    losses, lengths = [], set()
    for step in range(len(meta["losses"])):
        feed = _batch(case, step, meta)
        name, axis = TIME_AXIS[case]
        lengths.add(feed[name].shape[axis])
        loss = executor.run(program, feed=feed, fetch_list=[meta["loss"]], scope=scope)[0]
        losses.append(float(np.asarray(loss).reshape(-1)[0]))
    np.testing.assert_allclose(losses, meta["losses"], rtol=1e-6, atol=1e-7)
    assert len(lengths) == len(meta["losses"])   # every step another T
    assert executor.plans_built == 2              # the startup's and the training program's, once


def test_greedy_decoding_in_a_while_loop_gives_paddles_tokens_and_state():
    meta = json.loads((WEEK / "decoder" / "meta.json").read_text())
    program, scope = gradc.load(WEEK / "decoder" / "forward.pb"), gradc.Scope()
    gradc.load_params(scope, WEEK / "decoder" / "init.npz", program, strict=True)
    with np.load(WEEK / "decoder" / "out.npz") as paddle:
        decoded, final = gradc.Executor().run(program, feed={"src": paddle["src"]},
                                              fetch_list=[meta["decoded"], meta["final"]], scope=scope)
        np.testing.assert_array_equal(decoded, paddle["decoded"])
        np.testing.assert_allclose(final, paddle["final"], rtol=1e-6, atol=1e-7)


def _forecaster_feed(steps: int, batch: int) -> dict:
    rng = np.random.default_rng(0)
    series = np.sin(np.linspace(0, 30, steps + 1)[None] * rng.uniform(1, 4, (batch, 1)))
    return {"x": series[:, :-1, None].astype(np.float32), "y": series[:, 1:, None].astype(np.float32),
            "lengths": rng.integers(steps // 2, steps + 1, batch).astype(np.int64)}


def test_the_memory_estimate_counts_the_lstms_reserve_and_the_feeds_sequence_length():
    meta, program, scope, executor = _trained_program("forecaster")
    steps, batch = 200, 16
    feed = _forecaster_feed(steps, batch)
    executor.run(program, feed=feed, fetch_list=[meta["loss"]], scope=scope)   # Adam's state made: the step alone
    tracemalloc.start()
    try:
        executor.run(program, feed=feed, fetch_list=[meta["loss"]], scope=scope)
        measured = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    reserve = 2 * steps * batch * 6 * 16 * 4   # 2 layers' [T, B, 6H] float32 gates and states
    unfed = estimate(program, batch)[0]
    assert unfed.activations > 2 * batch * batch * 6 * 16 * 4   # T taken as the batch size: Reserve [2, 1, 16, 16, 96]
    fed = estimate(program, batch, feed={name: value.shape for name, value in feed.items()})[0]
    assert fed.inputs == feed["x"].nbytes + feed["y"].nbytes + feed["lengths"].nbytes
    assert reserve < fed.activations < 1.3 * reserve
    assert 0.8 * measured < fed.peak < 1.2 * measured


def test_show_memory_takes_a_feeds_shapes_and_refuses_what_the_program_does_not_take(tmp_path):
    program = tmp_path / "train.pb"
    compiled = gradc_cli("compile", WEEK / "forecaster" / "forward.pb", "--optimizer", "adam", "-o", program)
    assert compiled.returncode == 0, compiled.stderr
    np.savez(tmp_path / "long.npz", **_forecaster_feed(500, 32))
    short = gradc_cli("show", program, "--memory", "--batch-size", "32")
    long = gradc_cli("show", program, "--memory", "--batch-size", "32", "--feed", tmp_path / "long.npz")
    assert long.returncode == 0, long.stderr
    assert f"the feed's dims from {tmp_path / 'long.npz'}, other dims = batch size 32" in long.stdout
    assert "fed inputs              125.2 KiB" in long.stdout and "fed inputs                8.2 KiB" in short.stdout
    np.savez(tmp_path / "params.npz", **dict(np.load(WEEK / "forecaster" / "init.npz")))
    stranger = gradc_cli("show", program, "--memory", "--feed", tmp_path / "params.npz")
    assert stranger.returncode == 1 and stranger.stderr.startswith("gradc: error: feed ")
    assert "is not an input of the program (its inputs: lengths, x, y)" in stranger.stderr
    alone = gradc_cli("show", program, "--feed", tmp_path / "long.npz")
    assert alone.returncode == 1 and alone.stderr.strip() == "gradc: error: --feed: only with --memory"
