"""The random ops beyond uniform, normal and dropout draw what Paddle's CPU kernels draw (gradc.executor.
paddle_random_dists): after paddle.seed(42) a program of poisson, binomial, standard_gamma, dirichlet, exponential,
rrelu, gumbel_softmax, fractional max pooling, class_center_sample and nce gives Paddle's values, each op continuing
the global engine where the one before left it (tools/paddle_seeded_fixtures.py, tests/data/paddle/seeded/dists);
in PIR, a program an op (dists_pir)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.executor import libm, paddle_random, paddle_random_dists, randomness
from gradc.pir import load_pir

DATA = Path(__file__).parent / "data" / "paddle" / "seeded" / "dists"
PIR = DATA.parent / "dists_pir"
EXACT = ["poisson", "binomial", "binomial64", "gamma", "gamma64", "dirichlet", "exponential", "rrelu", "pooled",
         "remapped", "centers", "nce_uniform", "nce_log_uniform", "nce_custom"]


@pytest.fixture(autouse=True)
def _fresh_entropy_after():
    yield
    randomness.seed(None)


def _run() -> dict[str, np.ndarray]:
    meta = json.loads((DATA / "meta.json").read_text())
    randomness.seed(meta["seed"])
    scope = gradc.Scope()
    gradc.Executor().run(gradc.load(DATA / "startup.pb"), {}, [], scope)
    values = gradc.Executor().run(gradc.load(DATA / "main.pb"), dict(np.load(DATA / "feed.npz")),
                                  list(meta["fetch"].values()), scope)
    return dict(zip(meta["fetch"], values))


def test_each_random_op_draws_paddles_values_from_where_the_one_before_left_the_engine():
    got, paddle = _run(), np.load(DATA / "fetched.npz")
    for name in EXACT:
        assert got[name].dtype == paddle[name].dtype, name
        np.testing.assert_array_equal(got[name], paddle[name], err_msg=name)
    # gumbel_softmax's uniforms are Paddle's; its logs (Eigen's, not glibc's) and softmax differ by a few ulps
    np.testing.assert_allclose(got["gumbel"], paddle["gumbel"], rtol=1e-6, atol=0)
    for name in ("nce_uniform_cost", "nce_log_uniform_cost", "nce_custom_cost"):   # the same samples, float sums
        np.testing.assert_allclose(got[name], paddle[name], rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("key", json.loads((PIR / "meta.json").read_text())["fetch"])
def test_each_random_op_of_a_pir_program_draws_paddles_values(key):
    randomness.seed(json.loads((PIR / "meta.json").read_text())["seed"])
    program = load_pir(PIR / f"main_{key}.json")
    feed = {name: value for name, value in np.load(PIR / "feed.npz").items() if name in program.global_block.vars}
    got, paddle = gradc.Executor().run(program, feed, [key], gradc.Scope())[0], np.load(PIR / "fetched.npz")[key]
    if key == "gumbel":   # Eigen's logs
        np.testing.assert_allclose(got, paddle, rtol=1e-6, atol=0)
    else:
        assert got.dtype == paddle.dtype
        np.testing.assert_array_equal(got, paddle)


def test_another_seed_draws_other_values():
    randomness.seed(43)
    drawn = paddle_random_dists.gamma(randomness.engine(), np.linspace(0.05, 6, 60, dtype=np.float32))
    assert not np.array_equal(drawn, np.load(DATA / "fetched.npz")["gamma"])


def test_scalar_draws_leave_the_engine_where_whole_draws_would():
    whole = paddle_random.Engine(3).words(700)
    engine = paddle_random.Engine(3)
    uniforms = paddle_random_dists.ScalarDraws(engine, np.float64)
    firsts = [uniforms() for _ in range(400)]   # across the end of the first block
    np.testing.assert_array_equal(firsts, paddle_random.canonical_of(whole[:400], np.float64))
    np.testing.assert_array_equal(engine.words(300), whole[400:])


def test_poisson_and_gamma_consume_a_varying_number_of_words_in_order():
    means = np.array([0.5, 40.0, 3.0, 200.0])
    one_by_one = [paddle_random_dists.poisson(engine, means[i:i + 1])[0]
                  for engine in [paddle_random.Engine(8)] for i in range(4)]
    np.testing.assert_array_equal(paddle_random_dists.poisson(paddle_random.Engine(8), means), one_by_one)
    assert abs(paddle_random_dists.poisson(paddle_random.Engine(1), np.full(4000, 200.0)).mean() - 200) < 1.5


def test_without_glibcs_math_the_draws_are_an_ulp_from_paddles_at_most(monkeypatch):
    monkeypatch.setattr(libm, "_library", lambda: None)
    got, paddle = _run(), np.load(DATA / "fetched.npz")
    for name in ("exponential", "gamma", "dirichlet"):
        np.testing.assert_array_max_ulp(got[name], paddle[name], maxulp=1)
    np.testing.assert_array_equal(got["binomial"], paddle["binomial"])


def test_scalar_bounded_draws_are_lemires_skipping_the_words_it_skips():
    bound = 2 ** 63 + 12345   # about half the words are skipped
    draws = paddle_random_dists.ScalarDraws(paddle_random.Engine(5), np.float64)
    expected = paddle_random.integers(paddle_random.Engine(5), 50, 0, bound).astype(np.uint64)
    assert [draws.below(bound) for _ in range(50)] == expected.tolist()
