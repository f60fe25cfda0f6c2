"""The ops the PIR sweep of Paddle 3.3.1's public API added (tools/coverage/pir_sweep.py, docs/pir-sweep.md):
paddle.incubate's GPU-only fused_gemm_epilogue (fused_linear, fused_matmul_bias, fused_linear_activation) and
fused_softmax_mask_upper_triangle, run from the PIR programs Paddle builds for them on a machine without a GPU
(tests/data/paddle/pir_gpu_only, tools/paddle_gpu_only_programs.py) against their formulas, and gradc's training
programs of them through its PIR export; and the third-derivative ops (tanh_triple_grad, elementwise_mul_triple_grad)
in Paddle's legacy training program of the coverage row incubate_jvp (its PIR one: tests/test_pir_coverage.py), and
reshape2_grad_grad in that of incubate_Jacobian."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.pir import load_pir
from test_extra_math import program_of, round_trips_through_pir, weighted_loss

GPU_ONLY = Path(__file__).parent / "data" / "paddle" / "pir_gpu_only"
LAYERS = Path(__file__).parent / "data" / "paddle" / "layers"
JVP = LAYERS / "incubate_jvp"
r = np.random.default_rng(71)


def _case(case: str) -> tuple[gradc.Program, dict, dict]:
    directory = GPU_ONLY / case
    with np.load(directory / "feed.npz") as archive:
        feed = {name: archive[name] for name in archive.files}
    program = load_pir(directory / "program.json")
    fetches = json.loads((directory / "meta.json").read_text())["fetches"]
    return program, feed, dict(zip(fetches, gradc.Executor().run(program, feed, fetches, gradc.Scope())))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _gelu_tanh_slope(x):
    inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
    return 0.5 * (1 + np.tanh(inner)) + 0.5 * x / np.cosh(inner) ** 2 * math.sqrt(2 / math.pi) * (1 + 0.134145 * x * x)


# case: (x as matmul's left operand, w as its right one), from the float64 feed
LINEAR = {"fused_linear": (lambda x: x, lambda w: w),
          "fused_linear_transpose_weight": (lambda x: x, lambda w: w.T),
          "fused_matmul_bias_transpose_x": (lambda x: x.T, lambda w: w)}


@pytest.mark.parametrize("case", sorted(LINEAR))
def test_paddles_fused_linear_training_program_gives_a_linear_layers_gradients(case):
    """loss = mean(out^2), out = x w + b: dOut = 2 out / n, dx = dOut w^T, dw = x^T dOut (summed over x's leading
    dims), db = dOut summed over all but its last dim (each transposed back as its operand was)."""
    _, feed, got = _case(case)
    left, right = LINEAR[case]
    x, w, b = (feed[name].astype(np.float64) for name in ("x", "w", "b"))
    out = left(x) @ right(w) + b
    dout = 2 * out / out.size
    dx = dout @ right(w).T
    dw = left(x).reshape(-1, left(x).shape[-1]).T @ dout.reshape(-1, dout.shape[-1])
    np.testing.assert_allclose(got["out"], out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["loss"], np.mean(out * out), rtol=1e-5)
    np.testing.assert_allclose(got["x@GRAD"], left(dx) if case != "fused_matmul_bias_transpose_x" else dx.T,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["w@GRAD"], dw.T if case == "fused_linear_transpose_weight" else dw,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["b@GRAD"], dout.reshape(-1, dout.shape[-1]).sum(0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case, activate", [("fused_linear_relu", lambda pre: np.maximum(pre, 0)),
                                            ("fused_linear_gelu", _gelu_tanh)])
def test_fused_linear_activation_applies_cublaslt_s_epilogue(case, activate):
    _, feed, got = _case(case)
    x, w, b = (feed[name].astype(np.float64) for name in ("x", "w", "b"))
    np.testing.assert_allclose(got["out"], activate(x @ w + b), rtol=1e-5, atol=1e-6)


def test_softmax_mask_fuse_upper_triangle_is_a_causal_softmax():
    _, feed, got = _case("softmax_mask_fuse_upper_triangle")
    x = feed["x"].astype(np.float64)
    expected = np.zeros_like(x)
    for i in range(x.shape[-1]):   # row i: a softmax of its first i + 1 columns
        row = np.exp(x[..., i, : i + 1] - x[..., i, : i + 1].max(-1, keepdims=True))
        expected[..., i, : i + 1] = row / row.sum(-1, keepdims=True)
    np.testing.assert_allclose(got["out"], expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("activation, slope", [("relu", lambda pre: pre > 0), ("gelu", _gelu_tanh_slope)])
def test_gradcs_training_program_of_an_activated_fused_linear_round_trips_through_pir(activation, slope):
    """Paddle 3.3.1's PIR cannot build this backward (its vjp refuses the reserve_space it made): gradc's, with
    fused_gemm_epilogue_grad reading ReserveSpace, exported and read back gives the same loss and gradients."""
    inputs = {"X": r.standard_normal((2, 3, 4)), "Y": r.standard_normal((4, 5)), "Bias": r.standard_normal(5)}
    program, feed = program_of("fused_gemm_epilogue", inputs, ["Out", "ReserveSpace"], {"activation": activation},
                               grads=("X", "Y", "Bias"))
    weighted_loss(program, feed, ["out"], [2, 3, 5], r)
    gradc.append_backward(program, "loss")
    values = round_trips_through_pir(program, feed, ["loss", "x0@GRAD", "y0@GRAD", "bias0@GRAD"],
                                     ("fused_gemm_epilogue", "fused_gemm_epilogue_grad"))
    dpre = feed["w_out"] * slope(inputs["X"] @ inputs["Y"] + inputs["Bias"])
    np.testing.assert_allclose(values[3], dpre.reshape(-1, 5).sum(0), rtol=1e-12)


def test_gradcs_training_program_of_softmax_mask_fuse_upper_triangle_round_trips_through_pir():
    """Paddle 3.3.1 cannot build its PIR grad without a GPU: gradc's export of fused_softmax_mask_upper_triangle_grad,
    read back; a masked entry (above the diagonal) gets no gradient, nor does row 0's one entry (its softmax is 1)."""
    program, feed = program_of("fused_softmax_mask_upper_triangle", {"X": r.standard_normal((1, 2, 3, 3))}, ["Out"],
                               grads=("X",))
    weighted_loss(program, feed, ["out"], [1, 2, 3, 3], r)
    gradc.append_backward(program, "loss")
    _, dx = round_trips_through_pir(program, feed, ["loss", "x0@GRAD"], ("fused_softmax_mask_upper_triangle",
                                                                         "fused_softmax_mask_upper_triangle_grad"))
    assert np.all(dx[..., np.triu_indices(3, 1)[0], np.triu_indices(3, 1)[1]] == 0)
    assert np.all(dx[..., 0, 0] == 0) and np.all(dx[..., [1, 1, 2, 2, 2], [0, 1, 0, 1, 2]] != 0)


def test_paddles_legacy_program_through_a_jvp_runs_to_its_own_wrong_gradient():
    """Paddle's legacy backward of jvp(tanh(a) * a) holds tanh_triple_grad and elementwise_mul_triple_grad; gradc's
    kernels run it to Paddle's numbers, which central differences (grads_reference.npz) show wrong for x: the
    program, not the kernels, is at fault. gradc's own backward gives the reference (tests/test_layer_fixtures.py)."""
    program = gradc.load(JVP / "backward.pb")
    assert {"tanh_triple_grad", "elementwise_mul_triple_grad"} <= {op.type for op in program.global_block.ops}
    with np.load(JVP / "feed.npz") as feed, np.load(JVP / "grads.npz") as paddles, \
            np.load(JVP / "grads_reference.npz") as reference:
        got = dict(zip(paddles.files, gradc.Executor().run(program, dict(feed), paddles.files, gradc.Scope())))
        for name in paddles.files:
            np.testing.assert_allclose(got[name], paddles[name], rtol=1e-5, atol=1e-6)
        assert np.abs(got["x@GRAD"] - reference["x@GRAD"]).max() > 0.1


def test_paddles_legacy_program_of_a_jacobian_gives_its_gradient():
    """paddle.incubate.autograd.Jacobian reshapes the gradients it stacks: Paddle's legacy backward differentiates
    reshape2_grad with reshape2_grad_grad."""
    program = gradc.load(LAYERS / "incubate_Jacobian" / "backward.pb")
    assert "reshape2_grad_grad" in {op.type for op in program.global_block.ops}
    with np.load(LAYERS / "incubate_Jacobian" / "feed.npz") as feed, \
            np.load(LAYERS / "incubate_Jacobian" / "grads.npz") as paddles:
        (got,) = gradc.Executor().run(program, dict(feed), ["x@GRAD"], gradc.Scope())
        np.testing.assert_allclose(got, paddles["x@GRAD"], rtol=1e-5, atol=1e-6)
