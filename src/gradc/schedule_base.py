"""The base of every learning-rate schedule (gradc.schedules, gradc.schedules_cyclic): a rate per run."""

from __future__ import annotations


class Schedule:
    """A learning rate for each run (step 0, 1, ...)."""

    def __call__(self, step: int) -> float:
        raise NotImplementedError
