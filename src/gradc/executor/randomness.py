"""Where kernels draw the randomness no seed attribute fixes (dropout without fix_seed, initialisers with
seed 0, rrelu's noise, ...). Paddle draws these from its global generator (paddle.seed); so does gradc: every random
op's kernel draws from Paddle's own engine (gradc.executor.paddle_random and paddle_random_dists), seeded as
paddle.seed seeds it, so that ``seed(n)`` before a program gives what paddle.seed(n) gives Paddle. A numpy generator
serves the draws Paddle takes from std::random_device, which no seed reproduces (graph_sample_neighbors,
weighted_sample_neighbors), and multinomial without replacement beyond the size where Paddle's quadratic walk is
followed. Both take fresh entropy unless seeded. gradc train seeds them per step from --seed and the step number, so
a run resumed from a checkpoint draws what the uninterrupted run drew; with --paddle-stream it seeds them once, as
paddle.seed does, and its checkpoints carry their state (``snapshot``, ``restore``)."""

from __future__ import annotations

import os

import numpy as np

from .paddle_random import Engine

# made on first use: importing numpy.random (25-39 ms CPU) is a tenth of a small `gradc run`, which may draw nothing
_GENERATOR: list[np.random.Generator | None] = [None]
_ENGINE: list[Engine | None] = [None]


def generator() -> np.random.Generator:
    if _GENERATOR[0] is None:
        _GENERATOR[0] = np.random.default_rng()
    return _GENERATOR[0]


def engine(seed: int | None = None) -> Engine:
    """A random op's engine: one seeded with its own seed, as Paddle's kernels seed one, else Paddle's global CPU
    engine."""
    if seed is not None:
        return Engine(seed)
    if _ENGINE[0] is None:
        _ENGINE[0] = Engine.from_seed_sequence([int.from_bytes(os.urandom(4), "little")])
    return _ENGINE[0]


def seed(value) -> None:
    """Seed both: an int (as paddle.seed), a sequence of ints (e.g. [seed, step]), or None for fresh entropy."""
    _GENERATOR[0] = np.random.default_rng(value)
    _ENGINE[0] = None if value is None else Engine.from_seed_sequence(
        [value] if isinstance(value, (int, np.integer)) else list(value))


def snapshot() -> dict:
    """Where both streams stand (JSON-ready), for a checkpoint of a run that draws on from one seed."""
    return {"engine": engine().snapshot(), "generator": generator().bit_generator.state}


def restore(state: dict) -> None:
    """Continue both streams from ``snapshot()``'s state."""
    _ENGINE[0] = Engine.restored(state["engine"])
    _GENERATOR[0] = np.random.default_rng()
    _GENERATOR[0].bit_generator.state = state["generator"]
