"""Paddle's startup programs of every paddle.nn.initializer (tools/paddle_initializer_fixtures.py: a Conv2D weight
[16, 3, 3, 3], legacy and PIR): gradc verifies and runs each, to Paddle's values where none is drawn at random, and
to the distribution the initializer names where one is."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.pir import load_pir

DATA = Path(__file__).parent / "data" / "paddle" / "initializers"
CASES = sorted(p.name for p in DATA.iterdir())
FAN_IN, FAN_OUT = 3 * 9, 16 * 9


def _weight(case: str) -> np.ndarray:
    folder = DATA / case
    program = load_pir(folder / "startup.json") if case.endswith("_pir") else gradc.load(folder / "startup.pb")
    assert gradc.verify(program) == []
    scope = gradc.Scope()
    gradc.Executor().run(program, {}, [], scope)
    return np.asarray(scope["w"])


def test_every_initializer_has_both_programs():
    names = {case.rsplit("_", 1)[0] for case in CASES}
    assert len(names) == 12 and len(CASES) == 24


DETERMINISTIC = ("constant", "assign", "bilinear", "dirac")


@pytest.mark.parametrize("case", [c for c in CASES if c.rsplit("_", 1)[0] in DETERMINISTIC])
def test_a_deterministic_initializer_gives_paddles_weight(case):
    # Dirac's legacy startup flattens the weight in place, scatters ones into it and reshapes it back
    np.testing.assert_array_equal(_weight(case), np.load(DATA / case / "weight.npy"))


XAVIER_LIMIT, KAIMING_LIMIT = math.sqrt(6 / (FAN_IN + FAN_OUT)), math.sqrt(6 / FAN_IN)   # KaimingUniform: ReLU's gain
UNIFORM_LIMITS = {"uniform": (-0.3, 0.7), "xavier_uniform": (-XAVIER_LIMIT, XAVIER_LIMIT),
                  "kaiming_uniform": (-KAIMING_LIMIT, KAIMING_LIMIT), "truncated_normal": (-1.0, 2.0)}
NORMAL_MOMENTS = {"normal": (0.5, 2.0), "xavier_normal": (0.0, math.sqrt(2 / (FAN_IN + FAN_OUT))),
                  "kaiming_normal": (0.0, math.sqrt(2 / FAN_IN))}


@pytest.mark.parametrize("case", [c for c in CASES if c.rsplit("_", 1)[0] in UNIFORM_LIMITS])
def test_a_bounded_initializer_stays_within_its_bounds_and_fills_them(case):
    low, high = UNIFORM_LIMITS[case.rsplit("_", 1)[0]]
    weight = _weight(case)
    assert weight.shape == (16, 3, 3, 3) and weight.dtype == np.float32
    assert low <= weight.min() < low + 0.1 * (high - low) and high - 0.1 * (high - low) < weight.max() <= high


@pytest.mark.parametrize("case", [c for c in CASES if c.rsplit("_", 1)[0] in NORMAL_MOMENTS])
def test_a_normal_initializer_has_its_mean_and_deviation(case):
    mean, std = NORMAL_MOMENTS[case.rsplit("_", 1)[0]]
    weight = _weight(case).astype(np.float64)
    assert abs(weight.mean() - mean) < 0.25 * std and abs(weight.std() / std - 1) < 0.2   # 432 draws: > 5 sigma


@pytest.mark.parametrize("case", ["orthogonal_legacy", "orthogonal_pir"])
def test_an_orthogonal_initializer_gives_orthogonal_rows_scaled_by_its_gain(case):
    rows = _weight(case).reshape(16, -1).astype(np.float64)
    np.testing.assert_allclose(rows @ rows.T, 4.0 * np.eye(16), atol=1e-5)
