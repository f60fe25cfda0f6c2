"""Paddle 3.3.1 ran gradc's programs with second- and third-order backwards, recomputation and eager
accumulation (tests/interop_cases.py; tools/run_in_paddle.py --higher kept its numbers in
tests/data/paddle/higher_order): gradc's numbers are Paddle's, in float64."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gradc
from interop_cases import CASES

DATA = Path(__file__).parent / "data" / "paddle" / "higher_order"


def test_every_case_was_run_by_paddle():
    assert sorted(CASES) == sorted(path.stem for path in DATA.glob("*.npz"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradc_gives_the_gradients_paddle_computed_running_gradcs_program(name):
    program, feed, params, fetch = CASES[name]()
    scope = gradc.Scope()
    for var, value in params.items():
        scope[var] = value.copy()
    values = gradc.Executor().run(program, feed, fetch, scope)
    with np.load(DATA / f"{name}.npz") as paddle:
        assert sorted(paddle.files) == sorted(fetch)
        for var, value in zip(fetch, values):
            np.testing.assert_allclose(value, paddle[var], rtol=1e-6, atol=1e-8, err_msg=var)
