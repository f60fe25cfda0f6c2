"""Physics-informed losses as PaddleScience builds them (tools/paddlescience_pinn.py: its MLP, its Laplace and
Poisson equations through ppsci.lambdify, saved by Paddle 3.3.1 as PIR): the saved loss holds Paddle's own
second-derivative ops, and a training step differentiates it once more. tests/data/paddle/pinn/<case>/paddle.npz
holds Paddle's loss and its eager-mode parameter gradients (its static backward of the loaded file crashes)."""

from pathlib import Path

import numpy as np
import pytest

import gradc

DATA = Path(__file__).parent / "data" / "paddle" / "pinn"
CASES = {"laplace2d": {"tanh_grad_grad", "matmul_v2_grad_grad", "elementwise_add_grad_grad"},
         "poisson3d_silu": {"sigmoid_grad_grad", "matmul_v2_grad_grad", "elementwise_add_grad_grad",
                            "elementwise_mul_grad_grad"}}


def _loaded(case: str):
    program = gradc.load(DATA / case / "inference.json")
    scope = gradc.Scope()
    params = gradc.read_params(DATA / case / "inference.pdiparams", program)
    for name, value in params.items():
        scope[name] = value
    loss = next(op.input("X")[0] for op in program.global_block.ops if op.type == "fetch")
    return program, scope, params, loss, dict(np.load(DATA / case / "feed.npz"))


@pytest.mark.parametrize("case", CASES)
def test_a_residual_loss_of_paddles_second_derivative_ops_runs_to_paddles_loss(case):
    program, scope, _, loss, feed = _loaded(case)
    assert CASES[case] <= {op.type for op in program.global_block.ops}
    assert not gradc.verify(program)
    value, = gradc.Executor().run(program, feed, [loss], scope)
    np.testing.assert_allclose(value, np.load(DATA / case / "paddle.npz")["loss"], rtol=2e-5)


@pytest.mark.parametrize("case", CASES)
def test_a_training_step_of_a_residual_loss_takes_third_derivatives_to_paddles_gradients(case):
    program, scope, params, loss, feed = _loaded(case)
    paddle = np.load(DATA / case / "paddle.npz")
    pairs = gradc.append_backward(program, loss, parameter_list=list(params))
    assert {param for param, _ in pairs} == set(paddle.files) - {"loss"}   # the output bias is out of reach
    values = gradc.Executor().run(program, feed, [grad for _, grad in pairs], scope)
    for (param, _), value in zip(pairs, values):
        expected = paddle[param]
        np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max(), err_msg=param)
