"""Legacy static AMP training programs as a CUDA build of Paddle 3.3.1 writes them (tools/paddle_gpu_amp_static.py):
paddle.static.amp.decorate at O1 in float16 (Adam, dynamic loss scaling, overflowing steps) and bfloat16 (SGD, no
loss scaling: Paddle turns it off for bfloat16), and at O2 in float16 (float16 parameters, float32 master weights,
momentum). gradc trains each program as written; Paddle's CPU build can run none of them (no float16 / bfloat16
matmul_v2 kernels), so the numbers are its float32 run of the same decorate on the CPU build (which casts nothing):
the loss scale and its counters exactly, losses and parameters at the format's precision."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.bfloat16 import round_to_bfloat16

DATA = Path(__file__).parent / "data" / "paddle" / "gpu_amp"
CASES = sorted(p.name for p in DATA.iterdir())
MASTER = "_fp32_master_0"
SHARE = {"float16": 5e-3, "bfloat16": 1.5e-2}   # of a value's norm; measured: at most 2e-3 and 7e-3
EXACT = ("loss_scaling_0", "num_good_steps_0", "num_bad_steps_0")


def _case(name: str) -> tuple[dict, dict]:
    directory = DATA / name
    arrays = {}
    for part in ("init", "feeds", "states", "final"):
        with np.load(directory / f"{part}.npz") as archive:
            arrays[part] = {k: archive[k] for k in archive.files}
    arrays["losses"] = np.load(directory / "losses.npy")
    return json.loads((directory / "meta.json").read_text()), arrays


def _train(name: str) -> tuple[dict, dict, list[float], list[dict]]:
    meta, arrays = _case(name)
    program, scope, executor = gradc.load(DATA / name / "train.pb"), gradc.Scope(), gradc.Executor()
    for key, value in arrays["init"].items():
        scope[key] = value
    losses, states = [], []
    for step in range(meta["steps"]):
        feed = {key: batches[step] for key, batches in arrays["feeds"].items()}
        (loss,) = executor.run(program, feed, [meta["loss"]], scope)
        losses.append(float(loss))
        states.append({key: np.asarray(scope[key]) for key in arrays["init"]})
    return meta, arrays, losses, states


def _paddle_states(meta: dict, arrays: dict) -> list[dict]:
    stacked = arrays["states"]
    return [{k: v[step] for k, v in stacked.items()} for step in range(meta["steps"] - 1)] + [arrays["final"]]


def _on_the_master(key: str, state: dict) -> str:
    """The O2 program's name of a CPU-build persistable: a parameter's (and its accumulators') on its master."""
    masters = [name[:-len(MASTER)] for name in state if name.endswith(MASTER)]
    param = next((p for p in masters if key.startswith(p)), None)
    return key if param is None else param + MASTER + key[len(param):]


def test_the_cases():
    assert CASES == ["o1_bfloat16_sgd", "o1_float16_adam", "o2_float16_momentum"]


@pytest.mark.parametrize("name", CASES)
def test_the_cuda_builds_program_computes_in_the_format(name):
    meta, _ = _case(name)
    block = gradc.load(DATA / name / "train.pb").global_block
    matmul = next(op for op in block.ops if op.type == "matmul_v2")
    declared = block.vars[matmul.output("Out")[0]].dtype
    assert declared == {"float16": gradc.VarType.FP16, "bfloat16": gradc.VarType.BF16}[meta["dtype"]]
    scaling = {"check_finite_and_unscale", "update_loss_scaling"} <= {op.type for op in block.ops}
    assert scaling == (meta["dtype"] == "float16")


@pytest.mark.parametrize("name", CASES)
def test_gradc_trains_the_cuda_builds_amp_program_like_paddles_float32_run(name):
    meta, arrays, losses, states = _train(name)
    share = SHARE[meta["dtype"]]
    expected_losses = arrays["losses"]
    finite = np.isfinite(expected_losses)
    assert np.array_equal(np.isfinite(losses), finite)   # the same steps overflow
    np.testing.assert_allclose(np.array(losses)[finite], expected_losses[finite], rtol=share)
    for step, (ours, theirs) in enumerate(zip(states, _paddle_states(meta, arrays))):
        for key, expected in theirs.items():
            what = f"{name} step {step + 1}: {key}"
            if key in EXACT:
                np.testing.assert_array_equal(ours[key], expected, err_msg=what)
                continue
            got = ours.get(_on_the_master(key, ours), ours.get(key))
            assert got is not None, what
            error = np.linalg.norm(got.astype(np.float64) - expected)
            assert error <= share * np.linalg.norm(expected) + 1e-6, (what, error / np.linalg.norm(expected))


def test_o2_keeps_float16_parameters_rounded_from_their_float32_masters():
    _, _, _, states = _train("o2_float16_momentum")
    for state in states:
        for param in ("linear_0.w_0", "linear_0.b_0"):
            assert state[param].dtype == np.float16
            np.testing.assert_array_equal(state[param], state[param + MASTER].astype(np.float16))


def test_bfloat16_o1_casts_the_weights_and_keeps_them_float32():
    _, _, _, states = _train("o1_bfloat16_sgd")
    weight = states[-1]["linear_0.w_0"]
    assert weight.dtype == np.float32 and not np.array_equal(round_to_bfloat16(weight), weight)
