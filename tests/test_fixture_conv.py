"""Paddle's conv fixture: conv2d -> batch_norm (train) -> relu -> max pool2d -> fc -> cross entropy."""

import gradc
from fixtures import Fixture, grad_vars

FIXTURE = Fixture("conv")


def test_compiled_by_gradc_matches_paddle():
    program = gradc.load(FIXTURE.dir / "forward.pb")
    pairs = gradc.append_backward(program, loss=FIXTURE.meta["loss"])
    assert sorted(pairs) == sorted(map(tuple, FIXTURE.meta["params_grads"]))
    FIXTURE.assert_matches_paddle(FIXTURE.run(program))


def test_same_grad_vars_and_grad_ops_as_paddle():
    program = gradc.load(FIXTURE.dir / "forward.pb")
    gradc.append_backward(program)
    paddle = gradc.load(FIXTURE.dir / "backward.pb")
    assert grad_vars(program) == grad_vars(paddle)
    # conv2d_grad reads Input, Filter; pool2d_grad reads X and Out: the very slots Paddle wires
    assert [(op.type, op.inputs, op.outputs) for op in program.global_block.ops] == \
        [(op.type, op.inputs, op.outputs) for op in paddle.global_block.ops]


def test_paddles_own_backward_program_runs_in_gradc():
    FIXTURE.assert_matches_paddle(FIXTURE.run(gradc.load(FIXTURE.dir / "backward.pb")))
