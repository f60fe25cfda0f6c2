"""Tensor.random_ (the op random, gradc.ops.random_draws): seeded as paddle.seed seeds Paddle, gradc runs Paddle's
own PIR program of it (tools/paddle_random_inplace.py) to Paddle's draws, element for element; unseeded, its draws
are uniform over [from, to)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.executor import randomness
from gradc.pir import load_pir
from test_extra_math import run

DATA = Path(__file__).parent / "data" / "paddle" / "random_inplace"


@pytest.fixture(autouse=True)
def _fresh_entropy_after():
    yield
    randomness.seed(None)


def test_paddles_random_program_draws_paddles_numbers_after_the_same_seed():
    """float32 in [3, 1000) and int32 over [0, 2^31 - 1) from each word's low 32 bits, int64 in [-5, 2^40) from
    whole words; the grad through random_ is 0 (Paddle's too)."""
    meta = json.loads((DATA / "meta.json").read_text())
    randomness.seed(meta["seed"])
    got = gradc.Executor().run(load_pir(DATA / "program.json"), {"a": np.ones([3, 4], np.float32)}, meta["fetches"],
                               gradc.Scope())
    with np.load(DATA / "fetched.npz") as paddle:
        for name, value in zip(meta["fetches"], got):
            assert value.dtype == paddle[name].dtype
            np.testing.assert_array_equal(value, paddle[name])
    assert not got[-1].any() and len(set(got[0].ravel().tolist())) > 6


def test_random_draws_each_integer_of_its_range_alike_in_x_dtype():
    """60,000 draws in [-2, 4): each of the 6 values within 5 standard deviations of 10,000, nothing outside, and
    the draws of a second run differ from the first."""
    x = np.zeros(60_000, np.float64)
    (first,) = run("random", {"x": x}, ["out"], {"from": -2, "to": 4})
    assert first.dtype == np.float64 and set(np.unique(first).tolist()) == {-2.0, -1.0, 0.0, 1.0, 2.0, 3.0}
    counts = np.bincount((first + 2).astype(int), minlength=6)
    sigma = np.sqrt(60_000 * (1 / 6) * (5 / 6))
    assert np.all(np.abs(counts - 10_000) < 5 * sigma), counts
    assert not np.array_equal(first, run("random", {"x": x}, ["out"], {"from": -2, "to": 4})[0])
