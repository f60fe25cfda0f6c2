"""Every Paddle layer, loss and model of tests/data/paddle/layers: gradc compiles it, runs it and gets
Paddle's loss and gradients. A row listed in pending.txt must still fail for exactly the op types
listed there, so implementing an op forces its rows out of the list (docs/coverage.md is the table)."""

import numpy as np
import pytest

from layer_fixtures import Row, agrees, built_rows, check, read_pending, row_ids

PENDING = read_pending()


def test_pending_names_only_rows_paddle_built():
    assert set(PENDING) <= set(built_rows())


def test_rows_paddle_cannot_build_say_why():
    for row_id in set(row_ids()) - set(built_rows()):
        assert Row(row_id).meta["paddle_error"]


@pytest.mark.parametrize("row_id", built_rows())
def test_row(row_id):
    outcome = check(Row(row_id))
    if row_id not in PENDING:
        assert outcome.matches, outcome.error
    elif PENDING[row_id]:
        assert not outcome.matches
        now = sorted(outcome.missing_ops)
        assert outcome.missing_ops == PENDING[row_id], f"now blocked by {now}: update pending.txt"
    else:
        assert not outcome.matches, "it matches Paddle now: remove it from pending.txt"
        assert not outcome.missing_ops, f"blocked by {sorted(outcome.missing_ops)}: list them in pending.txt"


def test_float64_rule_allows_a_few_times_paddles_own_rounding():
    exact = np.array([1.0, -2.0, 3.0])
    paddle32 = exact + np.array([1e-4, 0.0, -1e-4])   # Paddle's float32 run, 1e-4 from its float64 run
    assert agrees(exact + 3e-4, paddle32, exact)
    assert not agrees(exact + 5e-4, paddle32, exact)
    assert not agrees(exact + 3e-4, paddle32, None)   # without a float64 run, rtol/atol against float32 only
