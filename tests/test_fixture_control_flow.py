"""Paddle's cond and while_loop fixtures: gradc compiles and runs them and gets Paddle's loss and
gradients; Paddle's own backward programs run in gradc's executor too; the cond's other branch is
checked against a float64 numpy re-implementation."""

import numpy as np
import pytest

import gradc
from fixtures import Fixture

CASES = ["cond", "while_loop"]


def compiled(case: str) -> gradc.Program:
    fixture = Fixture(case)
    program = gradc.load(fixture.dir / "forward.pb")
    gradc.append_backward(program, fixture.meta["loss"])
    return program


@pytest.mark.parametrize("case", CASES)
def test_gradc_backward_matches_paddle(case):
    fixture = Fixture(case)
    fixture.assert_matches_paddle(fixture.run(compiled(case)))


@pytest.mark.parametrize("case", CASES)
def test_paddles_backward_program_runs_in_gradc(case):
    fixture = Fixture(case)
    fixture.assert_matches_paddle(fixture.run(gradc.load(fixture.dir / "backward.pb")))


@pytest.mark.parametrize("case", CASES)
def test_backward_blocks_are_laid_out_as_paddle_does(case):
    """Same blocks (parent, forward block) holding the same grad op types."""
    ours, paddle = compiled(case), gradc.load(Fixture(case).dir / "backward.pb")
    layout = [(b.parent_idx, b.forward_block_idx if b.forward_block_idx is not None else -1,
               [op.type for op in b.ops]) for b in paddle.blocks]
    assert [(b.parent_idx, b.forward_block_idx if b.forward_block_idx is not None else -1,
             [op.type for op in b.ops]) for b in ours.blocks] == layout


def cond_reference(x, w1, w2, flag):
    """float64 numpy: out = tanh(x @ w1) if flag > 0 else 2 (x @ w2); loss = mean(out)."""
    x, w1, w2 = (a.astype(np.float64) for a in (x, w1, w2))
    g_out = np.full((x.shape[0], w1.shape[1]), 1.0 / (x.shape[0] * w1.shape[1]))
    if flag > 0:
        out = np.tanh(x @ w1)
        g_pre = g_out * (1 - out**2)
        return out.mean(), {"x@GRAD": g_pre @ w1.T, "W1@GRAD": x.T @ g_pre, "W2@GRAD": np.zeros_like(w2)}
    out = 2 * (x @ w2)
    return out.mean(), {"x@GRAD": 2 * g_out @ w2.T, "W1@GRAD": np.zeros_like(w1), "W2@GRAD": 2 * x.T @ g_out}


@pytest.mark.parametrize("flag", [1.0, -1.0, 0.0])
@pytest.mark.parametrize("program", ["gradc", "paddle"])
def test_cond_both_branches_match_numpy(flag, program):
    fixture = Fixture("cond")
    train = compiled("cond") if program == "gradc" else gradc.load(fixture.dir / "backward.pb")
    feed = {**fixture.npz("feed"), "flag": np.array([flag], np.float32)}
    results = fixture.run(train, feed)
    params = fixture.npz("params")
    loss, grads = cond_reference(feed["x"], params["W1"], params["W2"], flag)
    np.testing.assert_allclose(results[fixture.meta["loss"]], loss, rtol=1e-5, atol=1e-6)
    for name, expected in grads.items():
        np.testing.assert_allclose(results[name], expected, rtol=1e-5, atol=1e-6, err_msg=name)
