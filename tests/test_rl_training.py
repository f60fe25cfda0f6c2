"""Reinforcement learning's training programs: two optimizers minimizing two losses in one program (actor and critic),
and PARL's SAC learn step against Paddle 3.3.1 (tests/data/paddle/parl/sac_w8, from tools/parl_static.py: the example's
actor-critic 8 wide, Paddle's startup seeded, three steps on one batch; its actions drawn with Normal.sample), and its
IMPALA learn step (tests/data/paddle/parl/impala_w8, the same tool's fixture command)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.executor import randomness
from gradc.layers import ProgramBuilder
from gradc.optimizers import minimize

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from parl_static import gradc_compile, update_grads  # noqa: E402

CASE = DATA / "parl" / "sac_w8"
LR = 0.5


def _critic_then_actor():
    """An actor a (x @ a) scored by a critic c; the critic fits the score to y, the actor maximises it."""
    net = ProgramBuilder()
    x, y = net.data("x", [2, 3]), net.data("y", [2, 1])
    actor, critic = net.parameter("a", [3, 3]), net.parameter("c", [3, 1])
    score = net.op("matmul_v2", {"X": net.op("matmul_v2", {"X": x, "Y": actor})[0], "Y": critic})[0]
    critic_loss = net.mean(net.op("square", {"X": net.op("elementwise_sub", {"X": score, "Y": y})[0]})[0])
    actor_loss = net.op("scale", {"X": net.mean(score)}, {"scale": -1.0})[0]
    return net.program, critic_loss, actor_loss


def test_a_second_minimize_updates_only_its_own_parameters():
    """Before, the actor's minimize also updated the critic again (every parameter with a gradient in the program)."""
    program, critic_loss, actor_loss = _critic_then_actor()
    startups = [minimize(program, critic_loss, "sgd", lr=LR, parameter_list=["c"]),
                minimize(program, actor_loss, "sgd", lr=LR, parameter_list=["a"])]
    updates = [op for op in program.global_block.ops if op.type == "sgd"]
    assert [(op.inputs["Param"], op.inputs["Grad"]) for op in updates] == [(["c"], ["c@GRAD"]), (["a"], ["a@GRAD"])]

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal((2, 1)).astype("float32")
    a, c = rng.standard_normal((3, 3)).astype("float32"), rng.standard_normal((3, 1)).astype("float32")
    scope = gradc.Scope()
    scope["a"], scope["c"] = a.copy(), c.copy()
    for startup in startups:
        gradc.Executor().run(startup, {}, [], scope)
    gradc.Executor().run(program, {"x": x, "y": y}, [], scope)
    hidden = x @ a
    critic_grad = hidden.T @ (2 * (hidden @ c - y) / 2)
    # the actor's gradient is of the score its forward computed: with the critic before its update
    actor_grad = x.T @ np.broadcast_to(-c.T / 2, (2, 3))
    np.testing.assert_allclose(scope["c"], c - LR * critic_grad, rtol=1e-5)
    np.testing.assert_allclose(scope["a"], a - LR * actor_grad, rtol=1e-5)


def _steps(program, meta: dict, minimized: list, prefix: str, startups=(), case: Path = CASE):
    """Three steps from Paddle's parameters, gradc's draws seeded as Paddle's: each loss and every persistable var
    Paddle's file of the step holds against Paddle's, and the first step's gradients as the update ops read them."""
    randomness.seed(meta["seed"])
    gradc.Executor().run(gradc.load(case / "startup.pb"), {}, [], gradc.Scope())
    scope, executor = gradc.Scope(), gradc.Executor()
    for name, value in np.load(case / "params.npz").items():
        scope[name] = value.copy()
    for startup in startups:
        executor.run(startup, {}, [], scope)
    feed = dict(np.load(case / "feed.npz"))
    losses = [loss for loss, _, _ in minimized]
    grads = update_grads((op.inputs.get("Param"), op.inputs.get("Grad")) for op in program.global_block.ops)
    for step in (1, 2, 3):
        paddle = np.load(case / f"{prefix}{step}.npz")
        values = executor.run(program, feed, losses + list(grads.values()), scope)
        for loss, value in zip(losses, values):
            np.testing.assert_allclose(value, paddle[f"@loss:{loss}"], rtol=2e-5, err_msg=f"step {step} {loss}")
        if step == 1:
            for param, value in zip(grads, values[len(losses):]):
                np.testing.assert_allclose(value, paddle[f"@grad:{param}"], rtol=1e-4, atol=1e-6, err_msg=param)
        for name in paddle.files:
            if not name.startswith("@"):
                np.testing.assert_allclose(scope[name], paddle[name], rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.fixture(scope="module")
def meta():
    return json.loads((CASE / "meta.json").read_text())


def test_paddles_sac_learn_step_trains_as_in_paddle(meta):
    """Critic then actor minimized where PARL steps them, the soft update after; the actions drawn as Paddle's."""
    train = gradc.load(CASE / "train.pb")
    assert gradc.verify(train) == []
    _steps(train, meta, meta["minimized"], "step")


def test_gradc_compiles_the_sac_learn_step_as_paddle(meta):
    """forward.pb minimized by gradc once per optimizer (its parameters only), then the soft updates: Paddle's
    values with every backward before the updates."""
    program, startups = gradc_compile(CASE, meta)
    assert len([op for op in program.global_block.ops if op.type == "adam"]) == len(
        {param for _, _, params in meta["own_minimized"] for param in params})
    _steps(program, meta, meta["own_minimized"], "own_step", startups)


IMPALA = DATA / "parl" / "impala_w8"


def test_paddles_impala_learn_step_trains_as_in_paddle():
    """PARL's IMPALA (V-trace unrolled over 5 steps of 2 rollouts, Categorical entropy, Adam under a global-norm clip)
    on its example's Atari net, the last convolution 8 wide: Paddle's program, and gradc's compile of its forward
    (one optimizer, so Paddle's order and every-backward-first are the same steps)."""
    meta = json.loads((IMPALA / "meta.json").read_text())
    train = gradc.load(IMPALA / "train.pb")
    assert gradc.verify(train) == []
    assert {"stack", "clip", "bitwise_not", "log_softmax", "one_hot_v2"} <= {op.type for op in train.global_block.ops}
    _steps(train, meta, meta["minimized"], "step", case=IMPALA)
    program, startups = gradc_compile(IMPALA, meta)
    _steps(program, meta, meta["own_minimized"], "step", startups, case=IMPALA)
