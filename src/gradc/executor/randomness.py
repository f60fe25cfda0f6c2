"""Where kernels draw the randomness no seed attribute fixes (dropout without fix_seed, initialisers with
seed 0, rrelu's noise, ...): one generator, fresh entropy unless seeded. Paddle draws these from its global
generator too (paddle.seed); gradc train seeds this one per step from --seed and the step number, so a run
resumed from a checkpoint draws what the uninterrupted run drew."""

from __future__ import annotations

import numpy as np

# made on first use: importing numpy.random (25-39 ms CPU) is a tenth of a small `gradc run`, which may draw nothing
_GENERATOR: list[np.random.Generator | None] = [None]


def generator() -> np.random.Generator:
    if _GENERATOR[0] is None:
        _GENERATOR[0] = np.random.default_rng()
    return _GENERATOR[0]


def seed(value) -> None:
    """Seed the generator: an int, a sequence of ints (e.g. [seed, step]), or None for fresh entropy."""
    _GENERATOR[0] = np.random.default_rng(value)
