"""gradc draws what Paddle's CPU kernels draw (gradc.executor.paddle_random): seeded with paddle.seed's seed, a
program's initialisers and dropout give Paddle's values (tools/paddle_seeded_fixtures.py, legacy and PIR); an op
with a seed of its own gives Paddle's draws of that seed whatever the global seed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import gradc
import one_op
from cli_inprocess import gradc_cli
from gradc.executor import paddle_random, randomness
from gradc.executor.paddle_truncated_normal import truncated_normal
from gradc.pir import load_pir

DATA = Path(__file__).parent / "data" / "paddle" / "seeded"


@pytest.fixture(autouse=True)
def _fresh_entropy_after():
    yield
    randomness.seed(None)


def _startup(mode: str) -> gradc.Scope:
    folder = DATA / mode
    program = load_pir(folder / "startup.json") if mode == "pir" else gradc.load(folder / "startup.pb")
    scope = gradc.Scope()
    gradc.Executor().run(program, {}, [], scope)
    return scope


@pytest.mark.parametrize("mode", ["legacy", "pir"])
def test_seeded_initialisers_give_paddles_weights(mode):
    randomness.seed(json.loads((DATA / "legacy" / "meta.json").read_text())["seed"])
    scope = _startup(mode)
    paddle = np.load(DATA / mode / "params.npz")
    np.testing.assert_array_equal(np.asarray(scope["linear_0.w_0"]), paddle["linear_0.w_0"])   # uniform: exact
    np.testing.assert_array_equal(np.asarray(scope["linear_0.b_0"]), paddle["linear_0.b_0"])
    # normal: the polar method through the C library's logf (not correctly rounded), so exact too
    np.testing.assert_array_equal(np.asarray(scope["embedding_0.w_0"]), paddle["embedding_0.w_0"])
    # truncated normal: through Paddle's own erfinv (a rational approximation) in its float arithmetic, exact too
    np.testing.assert_array_equal(np.asarray(scope["linear_1.w_0"]), paddle["linear_1.w_0"])


def test_the_main_program_continues_paddles_stream_after_the_startup():
    meta = json.loads((DATA / "legacy" / "meta.json").read_text())
    randomness.seed(meta["seed"])
    scope = _startup("legacy")
    for name, value in np.load(DATA / "legacy" / "params.npz").items():   # the same weights, so the same outputs
        scope[name] = value
    fetch = meta["fetch"]
    values = gradc.Executor().run(gradc.load(DATA / "legacy" / "main.pb"), dict(np.load(DATA / "legacy" / "feed.npz")),
                                  list(fetch.values()), scope)
    paddle = np.load(DATA / "legacy" / "fetched.npz")
    got = dict(zip(fetch, values))
    np.testing.assert_array_equal(got["dropped"] == 0, paddle["dropped"] == 0)   # Paddle's dropout mask
    np.testing.assert_array_equal(got["own_seed"], paddle["own_seed"])         # seed 7's draws, not the global's
    np.testing.assert_array_equal(got["coins"], paddle["coins"])               # bernoulli, after the dropout
    np.testing.assert_array_equal(got["picks"], paddle["picks"])               # randint, after that
    np.testing.assert_array_equal(got["sampled"], paddle["sampled"])           # multinomial, with(out) replacement
    np.testing.assert_array_equal(got["shuffled"], paddle["shuffled"])         # randperm
    np.testing.assert_allclose(got["recurrent"], paddle["recurrent"], rtol=1e-5, atol=1e-6)   # the LSTM's dropout
    np.testing.assert_allclose(got["dropped"], paddle["dropped"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["loss"], paddle["loss"], rtol=1e-6)


def test_another_global_seed_draws_other_weights_but_the_same_own_seed_op():
    randomness.seed(43)
    scope = _startup("legacy")
    paddle = np.load(DATA / "legacy" / "params.npz")
    assert not np.array_equal(np.asarray(scope["linear_0.w_0"]), paddle["linear_0.w_0"])
    first = paddle_random.uniform(paddle_random.Engine(7), 15, -1.0, 1.0)
    np.testing.assert_array_equal(first.reshape(3, 5), np.load(DATA / "legacy" / "fetched.npz")["own_seed"])


def test_the_engine_is_the_standards_mt19937_64():
    # the C++ standard fixes the 10000th output of a default-seeded std::mt19937_64 (seed 5489)
    assert int(paddle_random.Engine(5489).words(10000)[-1]) == 9981545732273789042


def test_draws_split_across_calls_are_the_draws_of_one_call():
    whole = paddle_random.Engine(11).words(1000)
    engine = paddle_random.Engine(11)
    pieces = np.concatenate([engine.words(n) for n in (1, 311, 312, 5, 371)])
    np.testing.assert_array_equal(pieces, whole)


def test_a_draw_past_the_blocks_made_at_once_is_the_draws_of_its_pieces():
    count = 2 * 64 * 312 + 17   # a large draw makes 64 blocks at a time (paddle_random._RUN_BLOCKS)
    whole = paddle_random.Engine(3).words(count)
    engine = paddle_random.Engine(3)
    pieces = np.concatenate([engine.words(n) for n in (100, 312 * 64, 5, 312 * 64 - 88)])
    np.testing.assert_array_equal(pieces, whole)
    assert engine.snapshot()[312:] == [17, 1]   # the last block's 17 words used: the next draw continues it


def test_gradc_run_with_paddles_seed_writes_paddles_initial_weights(tmp_path):
    out = tmp_path / "weights.npz"
    result = gradc_cli("run", DATA / "legacy" / "startup.pb", "--seed", "42", "--fetch", "linear_0.w_0", "--out", out)
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(out)["linear_0.w_0"], np.load(DATA / "legacy" / "params.npz")["linear_0.w_0"])



OPTIMIZER_CASES = sorted(p.name for p in (DATA.parent / "pir").glob("optim_*"))


@pytest.mark.parametrize("case", OPTIMIZER_CASES)
def test_paddles_pir_startup_with_its_seed_gives_paddles_initial_persistables(case):
    folder = DATA.parent / "pir" / case
    randomness.seed(json.loads((folder / "meta.json").read_text())["seed"])   # tools/paddle_pir_optim_fixtures.py
    scope = gradc.Scope()
    gradc.Executor().run(load_pir(gzip.decompress((folder / "startup.json.gz").read_bytes())), {}, [], scope)
    initial = np.load(folder / "init.npz")
    assert len(OPTIMIZER_CASES) >= 20 and "linear_0.w_0" in initial.files
    for name in initial.files:
        np.testing.assert_array_equal(np.asarray(scope[name]), initial[name], err_msg=name)


def test_a_bound_near_two_to_the_64_skips_words_as_lemires_method_does():
    bound = 2 ** 63 + 12345   # about half the words fall below 2^64 mod bound and are skipped
    drawn = paddle_random._below(paddle_random.Engine(5), np.full(50, bound, np.uint64)).tolist()
    threshold, expected = (2 ** 64 - bound) % bound, []
    for word in (int(w) for w in paddle_random.Engine(5).words(400)):
        if len(expected) < 50 and word * bound % 2 ** 64 >= threshold:
            expected.append(word * bound >> 64)
    assert drawn == expected


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["uniform", "normal", "truncated", "truncated_wide"])
def test_float_and_double_draws_are_paddles_bit_for_bit(name, dtype):
    """Paddle's eager initialisers after paddle.seed (seeded/draws.npz): the polar method with the C library's log,
    the truncated normal through Paddle's own erfinv, each rounded where Paddle's float or double arithmetic rounds
    (the kernels take mean and std as float)."""
    meta = json.loads((DATA / "draws.json").read_text())
    initializer, arguments = meta["initialisers"][name]
    paddle = np.load(DATA / "draws.npz")[f"{name}_{dtype}"]
    engine = paddle_random.Engine.from_seed_sequence([meta["seed"]])
    if initializer == "Uniform":   # its op's min and max are float attributes: 0.7 is 0.699999988 in float64 too
        ours = paddle_random.uniform(engine, paddle.size, *np.float32(arguments), dtype=np.dtype(dtype))
    elif initializer == "Normal":
        ours = paddle_random.normal(engine, paddle.size, *arguments, dtype=np.dtype(dtype))
    else:
        ours = truncated_normal(engine, paddle.size, *arguments, dtype=np.dtype(dtype))
    np.testing.assert_array_equal(ours, paddle)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_scales_by_paddles_float_one_minus_p(dtype):
    """Kept values are divided by 1.0f - p (float, whatever the dtype), in training; inference in downscale mode
    multiplies by it: Paddle's eager dropout after paddle.seed, bit for bit (with 1 - p in double, float64 values
    were 2.6e-9 apart)."""
    meta, paddle = json.loads((DATA / "draws.json").read_text()), np.load(DATA / "draws.npz")
    x = np.linspace(-3, 3, paddle[f"dropout_{dtype}"].size).reshape(-1, 3).astype(dtype)
    randomness.seed(meta["seed"])
    trained = one_op.run("dropout", {"X": x}, {"dropout_prob": meta["dropout"],
                                               "dropout_implementation": "upscale_in_train"})["Out"]
    np.testing.assert_array_equal(trained, paddle[f"dropout_{dtype}"])
    inferred = one_op.run("dropout", {"X": x}, {"dropout_prob": meta["dropout"], "is_test": True,
                                                "dropout_implementation": "downgrade_in_infer"})["Out"]
    np.testing.assert_array_equal(inferred, paddle[f"dropout_inference_{dtype}"])
