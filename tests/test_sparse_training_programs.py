"""Paddle's training programs with a sparse embedding (Embedding(sparse=True): a SelectedRows gradient) run in
gradc as in Paddle: every optimizer with a sparse kernel, lazy and non-lazy Adam, clipping and L2 decay, a table
shared by two lookups (tools/paddle_sparse_fixtures.py -> tests/data/paddle/optim_sparse)."""

from pathlib import Path

import pytest

from optim_cases import OptimCase, assert_trained_like_paddle, train

DATA = Path(__file__).parent / "data" / "paddle" / "optim_sparse"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "meta.json").is_file())


@pytest.mark.parametrize("name", CASES)
def test_paddles_sparse_training_program_trains_like_paddle(name):
    case = OptimCase(name, DATA)
    assert case.meta["sparse_grads"], "the fixture has no SelectedRows gradient"
    losses, states = train(case, case.program())
    assert_trained_like_paddle(case, losses, states)
