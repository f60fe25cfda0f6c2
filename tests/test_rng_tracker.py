"""fleet's RNG state tracker in a 2-way tensor-parallel job (tests/data/paddle/rng_tracker, written by
tools/paddle_rng_tracker.py from Paddle 3.3.1's mp layers): the tracker switches Paddle's CPU generator between
states in Python and never reaches the program, so a rank's dropout draws from the state current when the program
runs. Run inside rng_state("model_parallel_rng"), that is a stream seeded with the rank's local seed (101, 102):
run_ranks(seed=[101, 102]) gives each rank Paddle's mask, and the two ranks together the single-device model's loss
and gradients with those masks; outside it, paddle.seed's stream, the same mask on every rank (seed=100)."""

import json
from pathlib import Path

import numpy as np

import gradc
from gradc.executor.ranks import run_ranks

DATA = Path(__file__).parent / "data" / "paddle" / "rng_tracker"
META = json.loads((DATA / "meta.json").read_text())
WHOLE = ("w1", "b1", "w2", "b2")   # reference.npz's names of the params, in the ranks' order


def reference() -> dict[str, np.ndarray]:
    with np.load(DATA / "reference.npz") as archive:
        return dict(archive)


def run_both(seed) -> tuple[list[list], dict[str, np.ndarray]]:
    """Both ranks' programs with gradc's backward, run together: (each rank's loss, mask, param grads; the grads
    joined along Paddle's split axes, by reference.npz's names)."""
    ref, programs, fetches, scopes = reference(), [], [], []
    for rank, info in enumerate(META["ranks"]):
        program = gradc.load(DATA / f"rank{rank}" / "forward.pb")
        grads = dict(gradc.append_backward(program, info["loss"]))
        programs.append(program)
        fetches.append([info["loss"], info["mask"], *(grads[name] for name in info["params"])])
        scope = gradc.Scope()
        for name, whole in zip(info["params"], WHOLE):
            axis = info["params"][name]["split_axis"]
            full = ref[f"param.{whole}"]
            scope[name] = full if axis is None else np.split(full, 2, axis=axis)[rank]
        scopes.append(scope)
    values = run_ranks(programs, [{"x": ref["x"]}] * 2, fetches, scopes, seed=seed)
    joined = {}
    for i, (spec, whole) in enumerate(zip(META["ranks"][0]["params"].values(), WHOLE), start=2):
        axis = spec["split_axis"]
        joined[whole] = values[0][i] if axis is None else np.concatenate([values[0][i], values[1][i]], axis=axis)
    return values, joined


def test_each_rank_draws_its_trackers_mask_and_the_ranks_give_paddles_numbers():
    ref = reference()
    values, grads = run_both([rank["seed"] for rank in META["ranks"]])
    for rank in range(2):
        np.testing.assert_array_equal(values[rank][1], ref[f"rank{rank}/mask"], err_msg=f"rank {rank}")
        np.testing.assert_allclose(values[rank][0], ref["loss"], rtol=1e-6)
    assert not np.array_equal(values[0][1], values[1][1])   # each rank's stream is its own
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, ref[f"grad.{name}"], rtol=1e-5, atol=1e-7, err_msg=name)


def test_outside_the_tracker_every_rank_draws_the_global_seeds_mask():
    ref = reference()
    values, _ = run_both(META["global_seed"])
    for rank in range(2):
        np.testing.assert_array_equal(values[rank][1], ref[f"rank{rank}/global_mask"], err_msg=f"rank {rank}")
    np.testing.assert_array_equal(ref["rank0/global_mask"], ref["rank1/global_mask"])

