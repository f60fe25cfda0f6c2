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

import gradc
from gradc.ir import VarType
from gradc.passes import VerifyPass
from gradc.pir import load_pir
from programs import Net
from seeded_params import param_value, stored_grad

DATA = Path(__file__).parent / "data" / "paddle" / "gpu_build"
CASES = sorted(p.name for p in DATA.iterdir())


def _meta(case: str) -> dict:
    return json.loads((DATA / case / "meta.json").read_text())


def _npz(case: str, name: str) -> dict:
    with np.load(DATA / case / f"{name}.npz") as archive:
        return {k: archive[k] for k in archive.files}


def program(case: str, name: str) -> gradc.Program:
    return load_pir(gzip.decompress((DATA / case / f"{name}.json.gz").read_bytes()))


def run_seeded(program: gradc.Program, case: str, fetch_list=None) -> list:
    """The program run on the case's feed with every parameter at its seeded value."""
    scope, block = gradc.Scope(), program.global_block
    for name, var in block.vars.items():
        if var.persistable and var.shape is not None and name not in ("feed", "fetch"):
            scope[name] = param_value(name, list(var.shape), _meta(case)["seed"])
    feed = {name: value for name, value in _npz(case, "feed").items() if name in block.vars}
    return gradc.Executor().run(program, feed=feed, fetch_list=fetch_list, scope=scope)


# a gradient's error allowed, as a share of its norm: float32 sums in another order. mobilenet_v2's relu6 makes
# channels of near-constant batch values, which its 52 training-mode batch norms divide by their deviation: its
# gradients move by up to 1e-3 of their norm, a few entries by 1e-2
GRAD_TOLERANCE = {"mobilenet_v2": 1e-2}


def assert_paddles_training_numbers(program: gradc.Program, case: str) -> None:
    """The loss, and each gradient to 1e-4 of its norm (a gradient that is 0 but for rounding, a batch norm's bias
    before another, to 1e-5 an entry)."""
    names = ["loss", *_meta(case)["grads"]]
    values = dict(zip(names, run_seeded(program, case, names)))
    np.testing.assert_allclose(values["loss"], np.load(DATA / case / "loss.npy"), rtol=3e-5)
    share = GRAD_TOLERANCE.get(case, 1e-4)
    for name, expected in _npz(case, "grads").items():
        got = stored_grad(name, values[name])
        assert got.shape == expected.shape, name
        assert np.linalg.norm(got - expected) <= share * np.linalg.norm(expected) + 1e-5 * np.sqrt(got.size), name


@pytest.mark.parametrize("case", CASES)
def test_the_inference_program_a_gpu_install_saves_gives_paddles_output(case):
    (out,) = run_seeded(program(case, "model"), case)
    np.testing.assert_allclose(out, _npz(case, "expected")["out"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES)
def test_gradcs_backward_of_the_forward_gives_paddles_gradients(case):
    forward = program(case, "forward")
    VerifyPass().apply(forward)
    gradc.append_backward(forward, "loss")
    assert_paddles_training_numbers(forward, case)


@pytest.mark.parametrize("case", CASES)
def test_paddles_training_program_runs_to_its_numbers(case):
    train = program(case, "train")
    VerifyPass().apply(train)
    assert_paddles_training_numbers(train, case)


def test_the_fixtures_hold_the_ops_a_cuda_build_writes():
    ops = {op for case in CASES for key in ("pir_inference_ops", "pir_train_ops") for op in _meta(case)[key]}
    assert {"pd_op.linear_v2", "pd_op.linear_v2_grad", "pd_op.var", "pd_op.var_grad", "pd_op.std", "pd_op.std_grad",
            "pd_op.nansum", "pd_op.nansum_grad", "pd_op.depthwise_conv2d", "pd_op.depthwise_conv2d_grad"} <= ops
    # every nn.Linear is a linear_v2: a matmul is left in the transformer's attention (q k^T, weights v) only
    assert "pd_op.matmul" not in {op for case in CASES if case != "vit_like" for op in _meta(case)["pir_inference_ops"]}


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


CONV_BIAS_CASES = ["depthwise_conv2d_bias", "depthwise_conv2d_bias_nhwc_no_bias", "depthwise_conv3d_bias"]


@pytest.mark.parametrize("case", CONV_BIAS_CASES)
def test_the_accuracy_flags_depthwise_convolutions_with_a_bias_and_their_grads_give_paddles_numbers(case):
    """Programs of the CUDA-only depthwise_conv2d_bias / depthwise_conv3d_bias and their grad ops, with Paddle's
    names (tools/paddle_gpu_build_conv_bias.py), against Paddle's CPU convolution with groups and a bias."""
    directory = DATA.parent / "pir_gpu_only" / case
    with np.load(directory / "feed.npz") as feed, np.load(directory / "expected.npz") as expected:
        fetches = json.loads((directory / "meta.json").read_text())["fetches"]
        values = gradc.Executor().run(load_pir(directory / "program.json"), feed=dict(feed))
        assert fetches == [name for name in ("out", "input@GRAD", "filter@GRAD", "bias@GRAD") if name in expected]
        for name, value in zip(fetches, values):
            np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-5, err_msg=name)
