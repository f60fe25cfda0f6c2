"""Paddle's own training programs (opt.minimize in legacy static mode: backward, clipping, regularization and
the update ops of every optimizer) run in gradc: from Paddle's initial persistables, on Paddle's batches and
learning rates, gradc gives Paddle's loss at every step and every persistable after every step."""

import pytest

from optim_cases import CASES, OptimCase, assert_trained_like_paddle, train


@pytest.mark.parametrize("name", CASES)
def test_paddles_training_program_trains_like_paddle(name):
    case = OptimCase(name)
    losses, states = train(case, case.program())
    assert_trained_like_paddle(case, losses, states)


def test_the_comparison_catches_a_wrong_update():
    """An adam whose epsilon is 10x Paddle's drifts from Paddle's parameters within the 5 steps."""
    case = OptimCase("mlp_adam")
    program = case.program()
    for op in program.global_block.ops:
        if op.type == "adam":
            op.set_attr("epsilon", op.attrs["epsilon"] * 10)
    losses, states = train(case, program)
    with pytest.raises(AssertionError, match="mlp_adam"):
        assert_trained_like_paddle(case, losses, states)
