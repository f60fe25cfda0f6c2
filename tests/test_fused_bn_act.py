"""The batch norm + relu fusions of Paddle's GPU training passes (gradc.ops.fused_bn_act): PIR programs written by
tools/paddle_gpu_only_bn_act.py (Paddle loaded each and confirmed its op names, operands, results and attributes),
run by gradc against Paddle's own CPU run of batch_norm (training, channel-last) + add + relu and its gradients
(expected.npz); the float64 central-difference checks are in tests/gradcheck_cases/fused_bn_act.py."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.pir import load_pir
from test_extra_math import program_of, round_trips_through_pir

GPU_ONLY = Path(__file__).parent / "data" / "paddle" / "pir_gpu_only"
CASES = ["bn_act_inplace_nhwc_f32", "bn_act_nlc_f64", "bn_add_act_inplace_nhwc_f32", "bn_add_act_ndhwc_f64"]
r = np.random.default_rng(41)


def _load(case: str, name: str) -> dict:
    with np.load(GPU_ONLY / case / name) as archive:
        return {key: archive[key] for key in archive.files}


@pytest.mark.parametrize("case", CASES)
def test_the_fused_ops_give_paddles_batch_norm_add_relu_and_its_gradients(case):
    feed, expected = _load(case, "feed.npz"), _load(case, "expected.npz")
    fetches = json.loads((GPU_ONLY / case / "meta.json").read_text())["fetches"]
    got = dict(zip(fetches, gradc.Executor().run(load_pir(GPU_ONLY / case / "program.json"), feed, fetches,
                                                   gradc.Scope())))
    tol = 1e-10 if feed["x"].dtype == np.float64 else 1e-5
    assert set(expected) == set(fetches)
    for name, value in expected.items():
        assert got[name].dtype == feed["x"].dtype, name
        np.testing.assert_allclose(got[name], value, rtol=tol, atol=tol, err_msg=name)
    assert 0 < (got["out"] == 0).mean() < 1   # the relu cut some values and passed others


def _one_value_a_channel(op: str, grads: tuple) -> tuple[dict, list]:
    c = 4
    inputs = {"X": r.standard_normal((1, 1, c)), "Scale": r.uniform(0.5, 1.5, c), "Bias": r.standard_normal(c),
              "Mean": r.standard_normal(c), "Variance": r.uniform(0.5, 1.5, c)}
    if op == "fused_bn_add_activation":
        inputs["Z"] = r.standard_normal((1, 1, c))
    program, feed = program_of(op, inputs, ["Y", "MeanOut"], grads=grads)
    return inputs, gradc.Executor().run(program, feed, ["y", "meanout"], gradc.Scope())


def test_one_value_a_channel_is_relu_of_x_with_the_statistics_left():
    """fused_batch_norm_act's kernel skips the normalisation when every channel holds one value."""
    inputs, (y, mean_out) = _one_value_a_channel("fused_batch_norm_act", ("X",))
    np.testing.assert_array_equal(y, np.maximum(inputs["X"], 0))
    np.testing.assert_array_equal(mean_out, inputs["Mean"])


def test_one_value_a_channel_with_z_normalises_x_to_zero():
    """fused_bn_add_activation's kernel has no such case: X is its own mean, so Y = relu(Bias + Z)."""
    inputs, (y, mean_out) = _one_value_a_channel("fused_bn_add_activation", ("X", "Z"))
    np.testing.assert_allclose(y, np.maximum(inputs["Bias"] + inputs["Z"], 0), rtol=1e-12)
    momentum = float(np.float32(0.9))   # the op's default, a float32 attribute
    np.testing.assert_allclose(mean_out, momentum * inputs["Mean"] + (1 - momentum) * inputs["X"].reshape(-1),
                               rtol=1e-12)


def test_the_fused_ops_round_trip_through_gradcs_pir_export():
    case = "bn_add_act_inplace_nhwc_f32"
    program = load_pir(GPU_ONLY / case / "program.json")
    fetches = json.loads((GPU_ONLY / case / "meta.json").read_text())["fetches"]
    round_trips_through_pir(program, _load(case, "feed.npz"), fetches,
                            ("fused_bn_add_activation_", "fused_bn_add_activation_grad"))


def test_the_running_variance_moves_toward_the_unbiased_batch_variance_as_cudnns():
    """cuDNN's BatchNormalizationForwardTrainingEx (the GPU kernels' only path) updates it with n / (n - 1) times the
    batch variance it normalises with; Paddle's CPU batch_norm would use the biased one."""
    x, old = r.standard_normal((3, 4, 2)), r.uniform(0.5, 1.5, 2)
    inputs = {"X": x, "Scale": np.ones(2), "Bias": np.zeros(2), "Mean": np.zeros(2), "Variance": old}
    program, feed = program_of("fused_batch_norm_act", inputs, ["Y", "VarianceOut"], {"momentum": 0.75})
    (variance_out,) = gradc.Executor().run(program, feed, ["varianceout"], gradc.Scope())
    batch = x.reshape(-1, 2)
    np.testing.assert_allclose(variance_out, 0.75 * old + 0.25 * batch.var(0, ddof=1), rtol=1e-12)
    assert not np.allclose(variance_out, 0.75 * old + 0.25 * batch.var(0), rtol=1e-3)
