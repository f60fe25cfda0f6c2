"""Paddle's single-block fixtures: gradc's compile + run gives Paddle's loss and gradients."""

import numpy as np
import pytest
from click.testing import CliRunner

import gradc
from fixtures import Fixture, grad_vars
from gradc.cli import cli

# The first three come from ../shared; transformer, vision and tensor_ops were built by
# tools/paddle_fixtures.py with PaddlePaddle 3.3.1 (about 50 op types between them).
CASES = ["mlp", "shared_param", "stop_grad_branch", "transformer", "vision", "tensor_ops"]
# kl_div's target, which Paddle's kldiv_loss_grad gives no gradient (gradc does: tests/test_user_week27.py)
DETACHED_AS_IN_PADDLE = {"tensor_ops": ["softmax_0.tmp_0"]}


def paddle_op_types(program):
    """Paddle's op sequence, less the one-input `sum` copies its pruning leaves behind (gradc writes
    such a grad directly)."""
    return [op.type for op in program.global_block.ops if not (op.type == "sum" and len(op.input("X")) == 1)]


@pytest.mark.parametrize("case", CASES)
def test_compiled_by_gradc_matches_paddle(case):
    fixture = Fixture(case)
    program = gradc.load(fixture.dir / "forward.pb")
    pairs = gradc.append_backward(program, loss=fixture.meta["loss"], no_grad_set=DETACHED_AS_IN_PADDLE.get(case))
    assert sorted(pairs) == sorted(map(tuple, fixture.meta["params_grads"]))
    fixture.assert_matches_paddle(fixture.run(program))


@pytest.mark.parametrize("case", CASES)
def test_same_grad_vars_and_ops_as_paddle(case):
    fixture = Fixture(case)
    program = gradc.load(fixture.dir / "forward.pb")
    gradc.append_backward(program, no_grad_set=DETACHED_AS_IN_PADDLE.get(case))
    paddle = gradc.load(fixture.dir / "backward.pb")
    assert grad_vars(program) == grad_vars(paddle)
    assert [op.type for op in program.global_block.ops] == paddle_op_types(paddle)


@pytest.mark.parametrize("case", CASES)
def test_paddles_own_backward_program_runs_in_gradc(case):
    fixture = Fixture(case)
    fixture.assert_matches_paddle(fixture.run(gradc.load(fixture.dir / "backward.pb")))


@pytest.mark.parametrize("case", CASES)
def test_cli_compile_and_run_match_paddle(case, tmp_path):
    fixture = Fixture(case)
    train, out = tmp_path / "train.pb", tmp_path / "results.npz"
    runner = CliRunner()
    detached = [arg for name in DETACHED_AS_IN_PADDLE.get(case, []) for arg in ("--no-grad", name)]
    result = runner.invoke(cli, ["compile", str(fixture.dir / "forward.pb"), "-o", str(train), *detached])
    assert result.exit_code == 0, result.output
    for param, grad in fixture.meta["params_grads"]:
        assert f"{param}" in result.output and grad in result.output
    fetches = [fixture.meta["loss"], *fixture.npz("grads")]
    args = ["run", str(train), "--feed", str(fixture.dir / "feed.npz"), "--params", str(fixture.dir / "params.npz"),
            "--out", str(out)] + [a for name in fetches for a in ("--fetch", name)]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    with np.load(out) as archive:
        fixture.assert_matches_paddle({name: archive[name] for name in archive.files})


def test_op_roles_follow_paddle():
    fixture = Fixture("mlp")
    program = gradc.load(fixture.dir / "forward.pb")
    gradc.append_backward(program)
    paddle = gradc.load(fixture.dir / "backward.pb")
    ours = [(op.type, op.attrs["op_role"], op.attrs.get("op_role_var")) for op in program.global_block.ops]
    theirs = [(op.type, op.attrs["op_role"], op.attrs.get("op_role_var")) for op in paddle.global_block.ops]
    assert ours == theirs
