"""Sharding (ZeRO stage 1): the two ranks' programs Paddle 3.3.1's static fleet ShardingOptimizer writes
(tests/data/paddle/sharding, made by tools/paddle_sharding.py: broadcast of each parameter from its owner, reduce of
each gradient to it, a loss seed of 1/2, each rank stepping its own parameters with Momentum) run together on each
rank's half of the rows give the single-device model's step on all the rows, as Paddle computes it on CPU."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.executor.ranks import run_ranks

DATA = Path(__file__).parent / "data" / "paddle" / "sharding"


@pytest.mark.parametrize("form", ["train.pb", "train.json"])
def test_the_ranks_step_their_parameters_as_one_device_steps_all(form):
    meta = json.loads((DATA / "meta.json").read_text())
    with np.load(DATA / "reference.npz") as archive:
        ref = dict(archive)
    programs, scopes = [], []
    for rank, info in enumerate(meta["ranks"]):
        programs.append(gradc.load(DATA / f"rank{rank}" / form))
        scope = gradc.Scope()
        gradc.Executor().run(gradc.load(DATA / f"rank{rank}" / "startup.pb"), scope=scope)
        for name in info["params"]:   # only the owner holds a parameter: the others get it by broadcast
            scope[name] = ref[f"param.{name}"].copy()
        scopes.append(scope)
    owned = [info["params"] for info in meta["ranks"]]
    grads = [[f"{name}@GRAD" for name in names] if form == "train.pb" else [] for names in owned]
    feeds = [{"x": ref[f"feed.x{rank}"], "label": ref[f"feed.label{rank}"]} for rank in range(2)]
    values = run_ranks(programs, feeds, [[meta["ranks"][0]["loss"], *names] for names in grads], scopes)
    np.testing.assert_allclose((values[0][0] + values[1][0]) / 2, ref["loss"], rtol=1e-6)   # the ranks' rows
    for rank, names in enumerate(owned):
        for name, grad in zip(names, values[rank][1:]):   # the reduced gradient at its owner
            np.testing.assert_allclose(grad, ref[f"grad.{name}"], rtol=1e-5, atol=1e-7)
        for name in names:
            np.testing.assert_allclose(scopes[rank][name], ref[f"stepped.{name}"], rtol=1e-5, atol=1e-7)
    assert sorted(owned[0] + owned[1]) == sorted(name.removeprefix("param.") for name in ref if name[:6] == "param.")
