"""Paddle's training programs with a sparse embedding (Embedding(sparse=True): a SelectedRows gradient) run in
gradc as in Paddle: every optimizer with a sparse kernel, lazy and non-lazy Adam, clipping and L2 decay, a table
shared by two lookups (tools/paddle_sparse_fixtures.py -> tests/data/paddle/optim_sparse)."""

from pathlib import Path

import pytest

from gradc.ir import VarType
from optim_cases import OptimCase, assert_trained_like_paddle, gradc_program, train

DATA = Path(__file__).parent / "data" / "paddle" / "optim_sparse"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "meta.json").is_file())


@pytest.mark.parametrize("name", CASES)
def test_paddles_sparse_training_program_trains_like_paddle(name):
    case = OptimCase(name, DATA)
    assert case.meta["sparse_grads"], "the fixture has no SelectedRows gradient"
    losses, states = train(case, case.program())
    assert_trained_like_paddle(case, losses, states)


@pytest.mark.parametrize("name", [c for c in CASES if "clip" not in c and "decay" not in c])
def test_gradcs_own_training_program_trains_like_paddles(name):
    """gradc's backward (the sparse lookup's table grad declared SELECTED_ROWS, as Paddle does) and its optimizer
    pass on the same forward program train like Paddle's program."""
    case = OptimCase(name, DATA)
    program, _ = gradc_program(case)
    sparse = sorted(n for n, v in program.global_block.vars.items() if v.type == VarType.SELECTED_ROWS)
    assert sparse == case.meta["sparse_grads"]
    losses, states = train(case, program)
    assert_trained_like_paddle(case, losses, states)
