"""Whole models as a CUDA build of Paddle 3.3.1 saves them (tools/paddle_gpu_build.py, docs/gpu-build.md): Paddle's
resnet18, mobilenet_v2 / v3 small, a TransformerEncoder classifier, an LSTM / GRU text model, an MLP normalised with
var / std (with nansum and both linear_v2 layouts) and a depthwise Conv1D. gradc runs each inference program
(pd_op.linear_v2 ...) to Paddle's output, compiles each forward with its own backward to Paddle's loss and
gradients, and runs Paddle's training program (linear_v2_grad, var_grad, ...) to the same numbers; every parameter
is seeded by name (tests/seeded_params.py), as the tool gave it to Paddle. And the ops' semantics at the edges the
gradient checks cannot step: nansum's NaNs, var / std where correction reaches the count."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from seeded_params import param_value, stored_grad

import gradc
from gradc.ir import VarType
from gradc.passes import VerifyPass
from gradc.pir import load_pir
from programs import Net

DATA = Path(__file__).parent / "data" / "paddle" / "gpu_build"
CASES = sorted(p.name for p in DATA.iterdir())


def _meta(case: str) -> dict:
    return json.loads((DATA / case / "meta.json").read_text())


def _npz(case: str, name: str) -> dict:
    with np.load(DATA / case / f"{name}.npz") as archive:
        return {k: archive[k] for k in archive.files}


def run_seeded(program: gradc.Program, case: str, fetch_list=None) -> list:
    """The program run on the case's feed with every parameter at its seeded value."""
    scope, block = gradc.Scope(), program.global_block
    for name, var in block.vars.items():
        if var.persistable and var.shape is not None and name not in ("feed", "fetch"):
            scope[name] = param_value(name, list(var.shape), _meta(case)["seed"])
    feed = {name: value for name, value in _npz(case, "feed").items() if name in block.vars}
    return gradc.Executor().run(program, feed=feed, fetch_list=fetch_list, scope=scope)


def assert_paddles_training_numbers(program: gradc.Program, case: str) -> None:
    names = ["loss", *_meta(case)["grads"]]
    values = dict(zip(names, run_seeded(program, case, names)))
    np.testing.assert_allclose(values["loss"], np.load(DATA / case / "loss.npy"), rtol=1e-5, atol=1e-6)
    for name, expected in _npz(case, "grads").items():
        np.testing.assert_allclose(stored_grad(name, values[name]), expected, rtol=2e-4, atol=2e-6, err_msg=name)


@pytest.mark.parametrize("case", CASES)
def test_the_inference_program_a_gpu_install_saves_gives_paddles_output(case):
    program = load_pir(DATA / case / "model.json")
    (out,) = run_seeded(program, case)
    np.testing.assert_allclose(out, _npz(case, "expected")["out"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES)
def test_gradcs_backward_of_the_forward_gives_paddles_gradients(case):
    program = load_pir(DATA / case / "forward.json")
    VerifyPass().apply(program)
    gradc.append_backward(program, "loss")
    assert_paddles_training_numbers(program, case)


@pytest.mark.parametrize("case", CASES)
def test_paddles_training_program_runs_to_its_numbers(case):
    program = load_pir(gzip.decompress((DATA / case / "train.json.gz").read_bytes()))
    VerifyPass().apply(program)
    assert_paddles_training_numbers(program, case)


def test_the_fixtures_hold_the_ops_a_cuda_build_writes():
    ops = {op for case in CASES for key in ("pir_inference_ops", "pir_train_ops") for op in _meta(case)[key]}
    assert {"pd_op.linear_v2", "pd_op.linear_v2_grad", "pd_op.var", "pd_op.var_grad", "pd_op.std", "pd_op.std_grad",
            "pd_op.nansum", "pd_op.nansum_grad", "pd_op.depthwise_conv2d", "pd_op.depthwise_conv2d_grad"} <= ops
    assert "pd_op.matmul" not in {op for case in CASES for op in _meta(case)["pir_inference_ops"]}


def _one_op(op: str, x: np.ndarray, attrs: dict, slot: str = "x") -> tuple[np.ndarray, np.ndarray]:
    """The op's out and the gradient of sum(out) at x, by gradc's backward."""
    net = Net()
    var = net.data(slot, list(x.shape), VarType.FP64)
    out = net.op(op, {slot: var}, attrs, out="out")
    loss = net.op("reduce_sum", {"X": out}, {"reduce_all": True})
    gradc.append_backward(net.program, loss)
    return tuple(gradc.Executor().run(net.program, feed={slot: x}, fetch_list=[out, f"{slot}@GRAD"]))


def test_nansum_counts_nans_as_zero_and_sends_them_no_gradient():
    x = np.array([[1.0, np.nan, 4.0], [np.nan, np.nan, 2.0]])
    out, grad = _one_op("nansum", x, {"axis": [1]})
    np.testing.assert_array_equal(out, [5.0, 2.0])
    np.testing.assert_array_equal(grad, [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])


def test_var_and_std_divide_by_the_count_less_the_correction_and_std_of_a_constant_has_zero_gradient():
    x = np.array([[1.0, 2.0, 4.0], [3.0, 7.0, 5.0]])
    out, grad = _one_op("var", x, {"axis": [1], "correction": 2.0})
    np.testing.assert_allclose(out, ((x - x.mean(1, keepdims=True)) ** 2).sum(1) / 1.0)
    np.testing.assert_allclose(grad, 2 * (x - x.mean(1, keepdims=True)))
    out, grad = _one_op("std", np.full((2, 3), 1.5), {"axis": [], "correction": 1.0})
    assert out == 0 and not grad.any()


def test_var_where_the_correction_reaches_the_count_is_infinite_as_torchs():
    """Paddle 3.3.1 gives 0 where correction > n (its grad divides by the negative n - correction); gradc divides by
    max(n - correction, 0), as torch documents: inf."""
    out, grad = _one_op("var", np.array([[1.0, 2.0, 4.0]]), {"axis": [1], "correction": 5.0})
    assert np.isposinf(out).all() and np.isinf(grad).all()
