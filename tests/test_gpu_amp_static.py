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
from gradc.bfloat16 import from_bits, round_to_bfloat16

DATA = Path(__file__).parent / "data" / "paddle" / "gpu_amp"
CASES = sorted(p.name for p in DATA.iterdir())
MASTER = "_fp32_master_0"
SHARE = {"float16": 5e-3, "bfloat16": 1.5e-2}   # of a value's norm; measured: at most 2e-3 and 7e-3
EXACT = ("loss_scaling_0", "num_good_steps_0", "num_bad_steps_0")
O2_BFLOAT16 = "o2_bfloat16_adamw"
PARAMS = ("linear_0.w_0", "linear_0.b_0")
BF16_UNIT = 2.0**-8   # bfloat16's unit roundoff: 8 significant bits
BETA1, BETA2, EPSILON, COEFF = 0.9, 0.999, 1e-8, 0.05   # AdamW(0.01, weight_decay=0.05), Paddle's defaults


def _case(name: str) -> tuple[dict, dict]:
    directory = DATA / name
    arrays = {}
    for part in ("init", "feeds", "states", "final"):
        with np.load(directory / f"{part}.npz") as archive:
            arrays[part] = {k: archive[k] for k in archive.files}
    arrays["losses"] = np.load(directory / "losses.npy")
    return json.loads((directory / "meta.json").read_text()), arrays


def _train(name: str, also: tuple[str, ...] = ()) -> tuple[dict, dict, list[float], list[dict]]:
    """Every step's loss and persistables, and the vars ``also`` names (fetched with the loss)."""
    meta, arrays = _case(name)
    program, scope, executor = gradc.load(DATA / name / "train.pb"), gradc.Scope(), gradc.Executor()
    for key, value in arrays["init"].items():
        scope[key] = from_bits(value) if value.dtype == np.uint16 else value   # Paddle's bfloat16: its bits
    losses, states = [], []
    for step in range(meta["steps"]):
        feed = {key: batches[step] for key, batches in arrays["feeds"].items()}
        loss, *fetched = executor.run(program, feed, [meta["loss"], *also], scope)
        losses.append(float(loss))
        states.append({key: np.asarray(scope[key]) for key in arrays["init"]} | dict(zip(also, fetched)))
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
    assert CASES == ["o1_bfloat16_sgd", "o1_float16_adam", "o2_bfloat16_adamw", "o2_float16_momentum"]


@pytest.mark.parametrize("name", CASES)
def test_the_cuda_builds_program_computes_in_the_format(name):
    meta, _ = _case(name)
    block = gradc.load(DATA / name / "train.pb").global_block
    matmul = next(op for op in block.ops if op.type == "matmul_v2")
    declared = block.vars[matmul.output("Out")[0]].dtype
    assert declared == {"float16": gradc.VarType.FP16, "bfloat16": gradc.VarType.BF16}[meta["dtype"]]
    scaling = {"check_finite_and_unscale", "update_loss_scaling"} <= {op.type for op in block.ops}
    assert scaling == (meta["dtype"] == "float16")


@pytest.mark.parametrize("name", [case for case in CASES if case != O2_BFLOAT16])
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


def test_o2_bfloat16_adamw_trains_like_paddles_float32_run_to_bfloat16s_rounding():
    """Every value the forward and backward compute is rounded to bfloat16 at most 4 times on its way (the cast
    of x, the parameter's rounding, the product, the sum with the bias; the gradients again through the grads of
    sub, square and mean), so the loss, each gradient and each master weight stay within 4 units of bfloat16's
    roundoff of the float32 run (the step of Adam is a ratio of gradients, as exact as they are), Moment2 (squared
    gradients) within 8, and Moment1, an average of gradients of either sign, within 4 units of the average of their
    magnitudes."""
    meta, arrays, losses, states = _train(O2_BFLOAT16, tuple(p + "@GRAD" for p in PARAMS))
    np.testing.assert_allclose(losses, arrays["losses"], rtol=4 * BF16_UNIT)
    magnitude = {p: 0.0 for p in PARAMS}
    for step, (ours, theirs) in enumerate(zip(states, _paddle_states(meta, arrays))):
        for param in PARAMS:
            magnitude[param] = BETA1 * magnitude[param] + (1 - BETA1) * np.abs(ours[param + "@GRAD"])
        for key, expected in theirs.items():
            got = ours[_on_the_master(key, ours)].astype(np.float64)
            param = next((p for p in PARAMS if key.startswith(p)), None)
            if param is None or "_pow_acc_" in key:   # learning rate, loss scale (unused: no scaling), pows
                np.testing.assert_array_equal(got, expected, err_msg=key)
                continue
            units = 8 if key.endswith("moment2_0") else 4
            scale = magnitude[param] if key.endswith("moment1_0") else expected
            error = np.linalg.norm(got - expected)
            assert error <= units * BF16_UNIT * np.linalg.norm(scale), (step + 1, key, error / np.linalg.norm(scale))


def _adamw_in_float64(state: dict, param: str, grad: np.ndarray) -> dict:
    """One AdamW step of a master weight as the CUDA kernel writes it (paddle/phi/kernels/gpu/adamw_kernel.cu),
    exactly: from float32 inputs in float64."""
    master, lr = state[param + MASTER].astype(np.float64), float(state["learning_rate_0"][0])
    moment1, moment2 = (state[param + MASTER + f"_moment{i}_0"].astype(np.float64) for i in (1, 2))
    beta1, beta2, epsilon, coeff = (float(np.float32(v)) for v in (BETA1, BETA2, EPSILON, COEFF))
    beta1_pow, beta2_pow = (float(state[param + MASTER + f"_beta{i}_pow_acc_0"][0]) for i in (1, 2))
    master = master * (1 - lr * coeff)
    moment1 = beta1 * moment1 + (1 - beta1) * grad
    moment2 = beta2 * moment2 + (1 - beta2) * grad * grad
    master = master - lr / (1 - beta1_pow) * moment1 / (np.sqrt(moment2) / np.sqrt(1 - beta2_pow) + epsilon)
    return {MASTER: master, MASTER + "_moment1_0": moment1, MASTER + "_moment2_0": moment2}


def test_o2_bfloat16_updates_the_master_weights_in_float32_and_rounds_them_into_the_parameters():
    """Given the bfloat16 gradient, the update of a master weight and its moments is float32 arithmetic: within a
    few float32 roundings of the exact step (bfloat16's would be 65536 times coarser); the parameter is the master's
    nearest bfloat16."""
    meta, arrays, _, states = _train(O2_BFLOAT16, tuple(p + "@GRAD" for p in PARAMS))
    before = [{k: from_bits(v) if v.dtype == np.uint16 else v for k, v in arrays["init"].items()}] + states[:-1]
    for step, (old, new) in enumerate(zip(before, states)):
        for param in PARAMS:
            grad = new[param + "@GRAD"]
            assert np.array_equal(grad, round_to_bfloat16(grad)), "the gradient is bfloat16"
            for suffix, exact in _adamw_in_float64(old, param, grad.astype(np.float64)).items():
                ours = new[param + suffix]
                assert ours.dtype == np.float32
                spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
                assert np.all(np.abs(ours - exact) <= 4 * spacing), (step + 1, param + suffix)
            np.testing.assert_array_equal(new[param], round_to_bfloat16(new[param + MASTER]))
