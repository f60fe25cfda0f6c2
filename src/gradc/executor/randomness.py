"""Where kernels draw the randomness no seed attribute fixes (dropout without fix_seed, initialisers with
seed 0, rrelu's noise, ...). Paddle draws these from its global generator (paddle.seed); so does gradc: every random
op's kernel draws from Paddle's own engine (gradc.executor.paddle_random and paddle_random_dists), seeded as
paddle.seed seeds it, so that ``seed(n)`` before a program gives what paddle.seed(n) gives Paddle. A numpy generator
serves the draws Paddle takes from std::random_device, which no seed reproduces (graph_sample_neighbors,
weighted_sample_neighbors), and multinomial without replacement beyond the size where Paddle's quadratic walk is
followed. Both take fresh entropy unless seeded. gradc train seeds them per step from --seed and the step number, so
a run resumed from a checkpoint draws what the uninterrupted run drew; with --paddle-stream it seeds them once, as
paddle.seed does, and its checkpoints carry their state (``snapshot``, ``restore``). Each rank of a run_ranks job
draws from streams of its own (``own_streams``), so its draws do not depend on how the ranks' threads interleave.
A ``seed`` op with deterministic=True draws from a named generator (``set_seed_generator``, as Paddle's
set_random_seed_generator), the process's or, under run_ranks, the rank's own."""

from __future__ import annotations

import os
import threading

import numpy as np

from .paddle_random import Engine


class _Later:
    """A stream made on its first draw from how it was seeded or restored: gradc train seeds both every step, and
    most steps draw nothing (seeding Paddle's engine through std::seed_seq takes 1-2 ms of Python, more than a small
    model's step)."""
    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make


# made on first use: importing numpy.random (25-39 ms CPU) is a tenth of a small `gradc run`, which may draw nothing
_GENERATOR: list[np.random.Generator | _Later | None] = [None]
_ENGINE: list[Engine | _Later | None] = [None]
_NAMED: dict[str, Engine] = {}   # the named generators of set_seed_generator
_THREAD = threading.local()   # a rank's own (generator, engine) slots and named generators while run_ranks runs it


def _slots() -> tuple[list, list]:
    return getattr(_THREAD, "slots", (_GENERATOR, _ENGINE))


def own_streams(value, named: dict[str, int] | None = None) -> None:
    """Give this thread streams of its own, seeded with ``value`` as ``seed`` seeds them (None: fresh entropy), and
    named generators of its own: ``named``, name -> seed."""
    _THREAD.slots, _THREAD.named = ([None], [None]), {}
    seed(value)
    for name, value in (named or {}).items():
        set_seed_generator(name, value)


def set_seed_generator(name: str, value: int) -> None:
    """A generator ``name`` seeded with ``value`` (as paddle.framework.random.set_random_seed_generator: a
    std::mt19937_64 through std::seed_seq({value}); a name is set once)."""
    named = getattr(_THREAD, "named", _NAMED)
    if name in named:
        raise ValueError(f"the random seed generator '{name}' is already set")
    named[name] = Engine.from_seed_sequence([value])


def seed_generator(name: str) -> Engine:
    """The generator set_seed_generator made as ``name``."""
    named = getattr(_THREAD, "named", _NAMED)
    if name not in named:
        raise ValueError(f"no random seed generator is named '{name}' (Paddle's set_random_seed_generator; gradc: "
                         f"gradc.executor.randomness.set_seed_generator, or run_ranks(seed_generators=...))")
    return named[name]


def generator() -> np.random.Generator:
    slot = _slots()[0]
    if slot[0] is None:
        slot[0] = np.random.default_rng()
    elif type(slot[0]) is _Later:
        slot[0] = slot[0].make()
    return slot[0]


def engine(seed: int | None = None) -> Engine:
    """A random op's engine: one seeded with its own seed, as Paddle's kernels seed one, else Paddle's global CPU
    engine."""
    if seed is not None:
        return Engine(seed)
    slot = _slots()[1]
    if slot[0] is None:
        slot[0] = Engine.from_seed_sequence([int.from_bytes(os.urandom(4), "little")])
    elif type(slot[0]) is _Later:
        slot[0] = slot[0].make()
    return slot[0]


def seed(value) -> None:
    """Seed both: an int (as paddle.seed), a sequence of ints (e.g. [seed, step]), or None for fresh entropy. Each
    stream is made from the seed on its first draw, as it would have been now."""
    generators, engines = _slots()
    if value is None:
        generators[0] = engines[0] = None
        return
    values = _seed_words(value)
    generators[0] = _Later(lambda: np.random.default_rng(values))
    engines[0] = _Later(lambda: Engine.from_seed_sequence(values))


def _seed_words(value) -> list:
    """``value`` as the list of words both streams are seeded with; refused here, where it is given, as numpy's
    seeding would refuse it at the first draw."""
    words = [value] if isinstance(value, (int, np.integer)) else list(value) \
        if isinstance(value, (list, tuple, np.ndarray)) else None
    if words is None or not all(isinstance(word, (int, np.integer)) for word in words):
        raise TypeError(f"a seed is an int or a sequence of ints, not {value!r}")
    if any(word < 0 for word in words):
        raise ValueError(f"a seed is non-negative, not {value!r}")
    return words


def snapshot() -> dict:
    """Where both streams stand (JSON-ready), for a checkpoint of a run that draws on from one seed."""
    return {"engine": engine().snapshot(), "generator": generator().bit_generator.state}


def restore(state: dict) -> None:
    """Continue both streams from ``snapshot()``'s state (a checkpoint's: made now, so that a bad one is refused as it
    is resumed)."""
    _restore_later(state)
    engine(), generator()


def _restore_later(state: dict) -> None:
    """Continue both streams from ``snapshot()``'s state, each made on its first draw."""
    generators, engines = _slots()
    engines[0] = _Later(lambda: Engine.restored(state["engine"]))
    generators[0] = _Later(lambda: _generator_at(state["generator"]))


def _generator_at(state: dict) -> np.random.Generator:
    made = np.random.default_rng()
    made.bit_generator.state = state
    return made


def same_draws(run):
    """``run`` made to draw, at every call, what its first call draws: both streams are put back before each call to
    where they stand now (a gradient check's runs then differentiate one sample of the noise, as the compiled gradient
    does)."""
    start = snapshot()

    def replayed(*args, **kwargs):
        _restore_later(start)
        return run(*args, **kwargs)
    return replayed
