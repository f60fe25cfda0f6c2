"""bfloat16 and float16 models as a CUDA build of Paddle 3.3.1 saves them with paddle.jit.save
(tools/paddle_gpu_lowprec_models.py, docs/gpu-build.md): an MLP under auto_cast O1, decorated O2, and cast with
model.to(dtype), each in both formats, with pd_op.linear_v2 in the format. gradc runs each inference program and
appends its own backward to each training program. Paddle's CPU build runs none of them (no bfloat16 / float16
linear_v2 kernel), so the reference is Paddle's float32 run of the same parameter values, at the format's tolerance."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.bfloat16 import round_to_bfloat16
from gradc.ir import VarType
from gradc.passes import VerifyPass
from gradc.pir import load_pir, serialize_pir

DATA = Path(__file__).parent / "data" / "paddle" / "gpu_lowprec"
CASES = sorted(p.name for p in DATA.iterdir())
# a result's error allowed, as a share of its norm, by the format the model computes in: a few roundings to its
# precision (bfloat16 keeps 8 significant bits, float16 11) against Paddle's float32
SHARE = {"bfloat16": 1e-2, "float16": 1.5e-3}   # measured: at most 4e-3 and 4e-4 (gradients twice that)
STORED = {"bfloat16": VarType.BF16, "float16": VarType.FP16}


def _meta(case: str) -> dict:
    return json.loads((DATA / case / "meta.json").read_text())


def _npz(case: str, name: str) -> dict:
    with np.load(DATA / case / f"{name}.npz") as archive:
        return {k: archive[k] for k in archive.files}


def _run(case: str, program: gradc.Program, fetches: list[str]) -> list[np.ndarray]:
    scope = gradc.Scope()
    for name, value in _npz(case, "params").items():
        scope[name] = value
    feed = {k: v for k, v in _npz(case, "feed").items() if k in program.global_block.vars}
    return gradc.Executor().run(program, feed, fetches, scope)


def _assert_near(got: np.ndarray, expected: np.ndarray, share: float, name: str) -> None:
    error = np.linalg.norm(got.astype(np.float64) - expected)
    assert error <= share * np.linalg.norm(expected), (name, error / np.linalg.norm(expected))


def _in_format(value: np.ndarray, dtype: str) -> bool:
    """gradc keeps a float16 value as float16 and a bfloat16 one as float32 holding bfloat16 numbers."""
    if dtype == "float16":
        return value.dtype == np.float16
    return value.dtype == np.float32 and np.array_equal(round_to_bfloat16(value), value)


def test_the_cases_are_three_ways_in_two_formats():
    assert CASES == [f"{way}_{dtype}" for way in ("cast", "o1", "o2") for dtype in ("bfloat16", "float16")]


@pytest.mark.parametrize("case", CASES)
def test_the_programs_compute_in_the_format_with_linear_v2(case):
    dtype = _meta(case)["dtype"]
    for stem in ("model", "train"):
        block = load_pir(DATA / case / f"{stem}.json").global_block
        linears = [op for op in block.ops if op.type == "linear_v2"]
        assert len(linears) == 2
        assert all(block.vars[op.output("out")[0]].dtype == STORED[dtype] for op in linears), stem
    declared = {name: block.vars[name].dtype for name in _meta(case)["dtypes"]}
    assert declared == {name: STORED.get(d, VarType.FP32) for name, d in _meta(case)["dtypes"].items()}


@pytest.mark.parametrize("case", CASES)
def test_the_inference_program_gives_paddles_float32_output_at_the_formats_precision(case):
    dtype = _meta(case)["dtype"]
    program = load_pir(DATA / case / "model.json")
    (out,) = _run(case, program, ["fetch_name_0"])
    assert _in_format(out, dtype)
    expected = _npz(case, "expected")["out"]
    _assert_near(out, expected, SHARE[dtype], "out")
    assert not np.allclose(out, expected, rtol=1e-6, atol=0)   # it computed in the format, not in float32


@pytest.mark.parametrize("case", CASES)
def test_gradcs_backward_trains_the_model_to_paddles_float32_gradients(case):
    meta, expected = _meta(case), _npz(case, "expected")
    program = load_pir(DATA / case / "train.json")
    pairs = gradc.append_backward(program, "fetch_name_0")
    VerifyPass().apply(program)
    assert sorted(param for param, _ in pairs) == sorted(meta["dtypes"])
    grads = [grad for _, grad in pairs]
    loss, *values = _run(case, program, ["fetch_name_0", *grads])
    np.testing.assert_allclose(loss, expected["loss"], rtol=SHARE[meta["dtype"]])
    for (param, grad), value in zip(pairs, values):
        stored = meta["dtypes"][param]
        assert _in_format(value, stored) if stored != "float32" else value.dtype == np.float32, grad
        _assert_near(value, expected[grad], 2 * SHARE[meta["dtype"]], grad)


@pytest.mark.parametrize("case", ["o1_bfloat16", "o2_float16"])
def test_the_training_program_with_gradcs_backward_round_trips_through_pir(case):
    """gradc's PIR export of the program and its backward (linear_v2_grad, layer_norm_grad of the format; Paddle
    3.3.1 loads the file) reads back to the same numbers."""
    program = load_pir(DATA / case / "train.json")
    fetches = ["fetch_name_0", *[grad for _, grad in gradc.append_backward(program, "fetch_name_0")]]
    again = load_pir(serialize_pir(program, fetch=fetches))
    assert {"linear_v2_grad", "layer_norm_grad"} <= {op.type for op in again.global_block.ops}
    for want, got in zip(_run(case, program, fetches), _run(case, again, fetches)):
        np.testing.assert_array_equal(got, want)
