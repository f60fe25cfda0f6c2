"""ZeRO stages 2 and 3: the two ranks' programs Paddle 3.3.1's static auto-parallel Engine writes
(tests/data/paddle/auto_sharding, made by tools/paddle_auto_sharding.py: the auto_parallel_sharding pass with
stage 2 or 3, degree 2, Momentum) run together on each rank's half of the rows give the single-device model's loss,
gradients and step on all the rows, as Paddle computes them on CPU; legacy and Paddle's PIR translation."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.executor.ranks import run_ranks

DATA = Path(__file__).parent / "data" / "paddle" / "auto_sharding"


def reference() -> dict:
    with np.load(DATA / "reference.npz") as archive:
        return dict(archive)


def started(stage: int, ref: dict) -> list[gradc.Scope]:
    """Both ranks' startup programs run together (they broadcast), then the reference's values of the parameters
    each rank holds."""
    meta = json.loads((DATA / "meta.json").read_text())["stages"][str(stage)]
    scopes = [gradc.Scope() for _ in meta]
    run_ranks([gradc.load(DATA / f"stage{stage}" / f"rank{rank}" / "startup.pb") for rank in range(2)],
              scopes=scopes)
    for scope, info in zip(scopes, meta):
        for name in info["held"]:
            if f"param.{name}" in ref:
                scope[name] = ref[f"param.{name}"].copy()
    return scopes


@pytest.mark.parametrize("form", ["train.pb", "train.json"])
@pytest.mark.parametrize("stage", [2, 3])
def test_the_ranks_step_as_one_device_steps_all_the_rows(stage, form):
    ref, meta = reference(), json.loads((DATA / "meta.json").read_text())["stages"][str(stage)]
    scopes = started(stage, ref)
    programs = [gradc.load(DATA / f"stage{stage}" / f"rank{rank}" / form) for rank in range(2)]
    owned = [info["owned"] for info in meta]
    grads = [[f"{name}@GRAD" for name in names] if form == "train.pb" else [] for names in owned]
    feeds = [{"x": ref[f"feed.x{rank}"], "label": ref[f"feed.label{rank}"]} for rank in range(2)]
    values = run_ranks(programs, feeds, [[meta[0]["loss"], *names] for names in grads], scopes)
    np.testing.assert_allclose((values[0][0] + values[1][0]) / 2, ref["loss"], rtol=1e-6)
    for rank, names in enumerate(grads):
        for name, grad in zip(names, values[rank][1:]):   # reduced at its owner, scaled by 1/2
            np.testing.assert_allclose(grad, ref[f"grad.{name.removesuffix('@GRAD')}"], rtol=1e-5, atol=1e-7)
    for rank, info in enumerate(meta):   # stage 2: every rank holds every parameter, stepped by its owner's broadcast
        for name in (info["held"] if stage == 2 else owned[rank]):
            if f"stepped.{name}" in ref:
                np.testing.assert_allclose(scopes[rank][name], ref[f"stepped.{name}"], rtol=1e-5, atol=1e-7)
    assert sorted(owned[0] + owned[1]) == sorted(name[6:] for name in ref if name.startswith("param."))


def test_stage_2_broadcasts_after_the_update_and_stage_3_at_each_use():
    meta = json.loads((DATA / "meta.json").read_text())["stages"]
    for rank in range(2):
        ops = {stage: gradc.load(DATA / f"stage{stage}" / f"rank{rank}" / "train.pb").global_block.ops
               for stage in (2, 3)}
        types = {stage: [op.type for op in stage_ops] for stage, stage_ops in ops.items()}
        last_step = max(index for index, kind in enumerate(types[2]) if kind == "momentum")
        assert [index for index, kind in enumerate(types[2]) if kind == "broadcast"] == \
            list(range(last_step + 1, last_step + 7))   # every parameter, from its owner, after the update
        assert meta["2"][rank]["owned"] == meta["3"][rank]["owned"]
        held = {name for name in meta["3"][rank]["held"] if "velocity" not in name}
        assert held == set(meta["3"][rank]["owned"])   # stage 3: a rank holds only its own parameters
        broadcast = [op.input("x")[0] for op in ops[3] if op.type == "broadcast"]
        others = [name for name in broadcast if "@BroadCast_" in name]
        assert len(broadcast) == 12 and len(others) == 6 and len(set(others)) == 6   # each of 6 at 2 uses
        assert {name.partition("@")[0] for name in others}.isdisjoint(held)
