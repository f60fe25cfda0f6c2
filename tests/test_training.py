"""Training: the optimizer pass and `gradc train` reproduce Paddle's parameter updates step by step."""

import json
import subprocess
import sys

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.passes import OptimizerPass, PassConditionError

CASES = ["train_sgd", "train_momentum", "train_adam", "train_adamw"]


def load_case(case):
    directory = DATA / case
    meta = json.loads((directory / "meta.json").read_text())
    with np.load(directory / "feed.npz") as feed, np.load(directory / "params.npz") as params, \
            np.load(directory / "trained.npz") as trained:
        return directory, meta, dict(feed), dict(params), dict(trained)


def assert_trained_like_paddle(scope, losses, directory, trained):
    np.testing.assert_allclose(losses, np.load(directory / "losses.npy"), rtol=1e-5)
    for name, expected in trained.items():
        np.testing.assert_allclose(scope[name], expected, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("case", CASES)
def test_optimizer_pass_matches_paddle(case):
    directory, meta, feed, params, trained = load_case(case)
    program = gradc.load(directory / "forward.pb")
    gradc.append_backward(program, meta["loss"])
    startup = OptimizerPass(meta["optimizer"], **meta["hyperparameters"])(program)
    scope = gradc.Scope()
    executor = gradc.Executor()
    executor.run(startup, scope=scope)
    for name, value in params.items():
        scope[name] = value
    losses = [executor.run(program, feed, [meta["loss"]], scope)[0] for _ in range(meta["steps"])]
    assert_trained_like_paddle(scope, losses, directory, trained)


@pytest.mark.parametrize("case", CASES)
def test_paddles_own_training_program_runs_in_gradc(case):
    directory, meta, feed, params, trained = load_case(case)
    scope = gradc.Scope()
    executor = gradc.Executor()
    executor.run(gradc.load(directory / "startup.pb"), scope=scope)
    for name, value in params.items():  # Paddle's random initialisers are not reproducible here
        scope[name] = value
    program = gradc.load(directory / "train.pb")
    losses = [executor.run(program, feed, [meta["loss"]], scope)[0] for _ in range(meta["steps"])]
    assert_trained_like_paddle(scope, losses, directory, trained)


def test_cli_compile_with_optimizer_and_train(tmp_path):
    directory, meta, _, _, trained = load_case("train_sgd")
    train, startup, saved = tmp_path / "train.pb", tmp_path / "train.startup.pb", tmp_path / "trained.npz"

    def gradc_cli(*args):
        result = subprocess.run([sys.executable, "-m", "gradc", *map(str, args)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout

    out = gradc_cli("compile", directory / "forward.pb", "-o", train, "--optimizer", "sgd", "--lr", "0.1")
    assert f"wrote {startup}" in out
    out = gradc_cli("train", train, "--startup", startup, "--params", directory / "params.npz",
                    "--feed", directory / "feed.npz", "--steps", meta["steps"], "--fetch", meta["loss"],
                    "--save-params", saved)
    logged = [float(line.split("=")[1]) for line in out.splitlines() if line.startswith("step ")]
    np.testing.assert_allclose(logged, np.load(directory / "losses.npy"), rtol=1e-5)
    with np.load(saved) as result:
        for name, expected in trained.items():
            np.testing.assert_allclose(result[name], expected, rtol=1e-5, atol=1e-6)


def test_optimizer_needs_gradients_first():
    program = gradc.load(DATA / "train_sgd" / "forward.pb")
    with pytest.raises(PassConditionError, match="run the backward pass first"):
        OptimizerPass("sgd")(program)


def test_unknown_optimizer():
    with pytest.raises(gradc.GradcError, match="unknown optimizer 'adamax2'"):
        OptimizerPass("adamax2")


@pytest.mark.parametrize("dtype, lr_dtype", [("float64", np.float64), ("float32", np.float32)])
def test_the_learning_rate_takes_the_parameters_dtype_as_paddles_does(dtype, lr_dtype):
    """Paddle's optimizer makes its learning rate of the parameters' dtype: a float64 model's 0.01 is 0.01, not
    float32's 0.009999999776 (which moved every float64 update by 2.2e-8 of itself)."""
    from gradc.layers import ProgramBuilder
    net = ProgramBuilder()
    x = net.data("x", [2, 3], dtype)
    w = net.parameter("w", [3, 1], dtype)
    (product,) = net.op("matmul_v2", {"X": x, "Y": w})
    loss = net.mean(product)
    startup = gradc.minimize(net.program, loss, "sgd", lr=0.01)
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(net.startup, {}, [], scope)
    executor.run(startup, {}, [], scope)
    before = np.array(scope["w"])
    feed = np.arange(6, dtype=dtype).reshape(2, 3)
    executor.run(net.program, {"x": feed}, [], scope)
    grad = feed.mean(0, keepdims=True).T   # d mean(x w) / dw
    np.testing.assert_array_equal(scope["w"], before - lr_dtype(0.01) * grad.astype(dtype))
