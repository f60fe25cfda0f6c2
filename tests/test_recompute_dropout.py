"""Dropout under Paddle's recompute (tests/data/paddle/recompute, tools/paddle_recompute_fixture.py): Paddle's
RecomputeOptimizer puts a `seed` op before each dropout it runs again in the backward, and both runs read its seed.
gradc runs Paddle's training program: with the dropouts' seeds fixed it gives Paddle's losses, gradients and
parameters; with seed 0 (Paddle then asks std::random_device) it draws a seed, the same mask in both runs."""

from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.errors import GradcError

DATA = Path(__file__).parent / "data" / "paddle" / "recompute"


def _run(program: gradc.Program, fetch: list[str]):
    scope, executor = gradc.Scope(), gradc.Executor()
    for name, value in np.load(DATA / "params.npz").items():
        scope[name] = value.copy()
    feed = dict(np.load(DATA / "feed.npz"))
    return [executor.run(program, feed, fetch, scope) for _ in range(2)], scope


def test_paddles_recompute_program_with_seeded_dropouts_gives_paddles_steps():
    meta = __import__("json").loads((DATA / "meta.json").read_text())
    program = gradc.load(DATA / "train.pb")
    assert [op.type for op in program.global_block.ops].count("seed") == 2
    grads = list(np.load(DATA / "grads.npz"))
    steps, scope = _run(program, [meta["loss"], *grads])
    np.testing.assert_allclose([float(step[0]) for step in steps], np.load(DATA / "losses.npy"), rtol=1e-6)
    for name, value in zip(grads, steps[0][1:]):
        np.testing.assert_allclose(value, np.load(DATA / "grads.npz")[name], rtol=1e-5, atol=1e-6, err_msg=name)
    for name, value in np.load(DATA / "final.npz").items():
        np.testing.assert_allclose(np.asarray(scope[name]), value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_an_unseeded_recompute_draws_one_mask_for_both_runs():
    program = gradc.load(DATA / "train.pb")
    for op in program.global_block.ops:
        if op.type == "seed":
            op.attrs["seed"] = 0
    dropouts = [op for op in program.global_block.ops if op.type == "dropout"]
    masks = [op.output("Mask")[0] for op in dropouts]   # forward, forward, recomputed, recomputed
    (first, second), _ = _run(program, masks)
    assert not np.array_equal(first[0], second[0])   # a fresh seed each step
    for step in (first, second):
        by_seed = {}
        for op, mask in zip(dropouts, step):
            by_seed.setdefault(op.input("Seed")[0], []).append(mask)
        assert all(len(same) == 2 and np.array_equal(*same) for same in by_seed.values())


def test_a_seed_from_a_named_generator_never_set_fails():
    program = gradc.load(DATA / "train.pb")
    next(op for op in program.global_block.ops if op.type == "seed").attrs["deterministic"] = True
    with pytest.raises(GradcError, match=r"\(seed\): no random seed generator is named ''"):
        _run(program, [])


def test_paddles_recompute_program_goes_to_pir_and_back_with_its_seed_ops():
    """Paddle 3.3.1's translator writes the seed op as pd_op.seed (its PIR API makes none): gradc's export of
    Paddle's recompute program, read back, trains to the same numbers."""
    from gradc.pir import parse_pir, serialize_pir

    meta = __import__("json").loads((DATA / "meta.json").read_text())
    program = gradc.load(DATA / "train.pb")
    fetch = [meta["loss"], *np.load(DATA / "grads.npz")]
    data = serialize_pir(program, fetch=fetch)
    assert data.count(b'"1.seed"') == 2
    (first, second), _ = _run(program, fetch)
    (again, _), _ = _run(parse_pir(data), fetch)
    for want, got in zip(first, again):
        np.testing.assert_allclose(got, want, rtol=1e-6)
