"""gradc.executor.randomness makes a seeded stream on its first draw: gradc train seeds both streams every step, and
seeding Paddle's engine through std::seed_seq takes 1-2 ms of Python, more than a small model's whole step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.executor import Scope, paddle_random, randomness
from gradc.training.trainer import STEP, Trainer

MLP = Path(__file__).parent.parent / "examples" / "mlp"


@pytest.fixture(autouse=True)
def _fresh_entropy_after():
    yield
    randomness.seed(None)


@pytest.fixture
def seedings(monkeypatch) -> list:
    """The seed values each engine made through std::seed_seq was seeded with."""
    made, original = [], paddle_random.Engine.from_seed_sequence

    def counted(values):
        made.append(list(values))
        return original(values)
    monkeypatch.setattr(paddle_random.Engine, "from_seed_sequence", counted)
    return made


def test_a_stream_seeded_lazily_draws_what_one_seeded_at_once_draws():
    randomness.seed([3, 1, 7])
    np.testing.assert_array_equal(randomness.engine().words(400),
                                  paddle_random.Engine.from_seed_sequence([3, 1, 7]).words(400))
    np.testing.assert_array_equal(randomness.generator().random(5), np.random.default_rng([3, 1, 7]).random(5))


def test_training_steps_that_draw_nothing_seed_no_engine(seedings):
    scope = Scope()
    for name, value in np.load(MLP / "params.npz").items():
        scope[name] = value
    program = gradc.load(MLP / "forward.pb")
    startup = gradc.minimize(program, "mean_0.tmp_0", "adam", lr=0.01)
    trainer = Trainer(program, startup, scope, fetch=["mean_0.tmp_0"], seed=0)
    feed = dict(np.load(MLP / "feed.npz"))
    losses = [trainer.train_step(feed)[0] for _ in range(3)]
    assert seedings == [] and losses[2] < losses[0]
    randomness.engine()   # the first draw after the third step's seeding makes its engine, from that step's seed
    assert seedings == [[0, STEP, 2]]


def test_replayed_draws_repeat_the_first_runs(seedings):
    randomness.seed(5)
    draw = randomness.same_draws(lambda: (randomness.engine().words(3), randomness.generator().random(2)))
    first, second = draw(), draw()
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert seedings == [[5]]   # the replays restore the snapshot, not the seeding


@pytest.mark.parametrize(("value", "error"), [(-1, ValueError), ([1, -2], ValueError), ([1, "2"], TypeError),
                                             (1.5, TypeError), ("7", TypeError)])
def test_a_bad_seed_is_refused_as_it_is_given(value, error):
    with pytest.raises(error, match="a seed is"):
        randomness.seed(value)
