"""A seed op with deterministic=True draws from the generator rng_name names (gradc.executor.randomness
.set_seed_generator, as Paddle's set_random_seed_generator): Paddle 3.3.1's seeds and dropout masks on CPU
(tests/data/paddle/seed_generator, made by tools/paddle_seed_generator.py), each rank's generator seeded as fleet's
model_parallel_random_seed(100) seeds a 2-way tensor-parallel job's tracker."""

import threading
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.executor import randomness
from gradc.executor.ranks import run_ranks

DATA = Path(__file__).parent / "data" / "paddle" / "seed_generator"
NAME, FETCHED = "model_parallel_rng", ["seed0", "seed1", "seed2", "dropped"]


def reference() -> dict[str, np.ndarray]:
    with np.load(DATA / "reference.npz") as archive:
        return dict(archive)


def test_each_rank_draws_paddles_seeds_and_mask_from_its_own_generator():
    ref, program = reference(), gradc.load(DATA / "program.pb")
    named = [{NAME: int(ref[f"seed.rank{rank}"])} for rank in range(2)]
    values = run_ranks([program] * 2, [{"x": ref["x"]}] * 2, FETCHED, seed_generators=named)
    for rank in range(2):
        for name, value in zip(FETCHED, values[rank]):
            np.testing.assert_array_equal(value, ref[f"rank{rank}/run0/{name}"], err_msg=f"rank {rank} {name}")


def test_a_generator_draws_on_across_runs():
    """The second run draws the generator's next three words. gradc runs the seed ops in program order; Paddle's
    executor, after its first run, runs these three independent ops in an order of its own, which changed from one
    run of the tool to the next: which seed op gets which of the three words is not reproducible in Paddle."""
    ref, program, got, failures = reference(), gradc.load(DATA / "program.pb"), [], []

    def rank0():   # a thread of its own, as run_ranks gives each rank: its generators are its own
        try:
            randomness.own_streams(None, {NAME: int(ref["seed.rank0"])})
            got.extend(gradc.Executor().run(program, {"x": ref["x"]}, FETCHED) for _ in range(2))
        except Exception as exc:  # noqa: BLE001 - re-raised below, in the test's thread
            failures.append(exc)

    thread = threading.Thread(target=rank0)
    thread.start()
    thread.join()
    assert not failures, failures
    for name, value in zip(FETCHED, got[0]):
        np.testing.assert_array_equal(value, ref[f"rank0/run0/{name}"], err_msg=name)
    ours = [int(got[1][i][0]) for i in range(3)]
    assert sorted(ours) == sorted(int(ref[f"rank0/run1/seed{i}"][0]) for i in range(3))
    assert not set(ours) & {int(ref[f"rank0/run0/seed{i}"][0]) for i in range(3)}


def test_a_name_is_set_once():
    def twice():
        randomness.own_streams(None, {NAME: 1})
        with pytest.raises(ValueError, match=f"the random seed generator '{NAME}' is already set"):
            randomness.set_seed_generator(NAME, 2)

    thread = threading.Thread(target=twice)
    thread.start()
    thread.join()
