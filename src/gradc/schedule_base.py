"""The base of every learning-rate schedule (gradc.schedules, gradc.schedules_cyclic): a rate per run; and the host
schedule a program was minimized with, which a Trainer of that program steps unless told another."""

from __future__ import annotations

import math
from weakref import WeakKeyDictionary

from .errors import GradcError

FLOAT32_MAX = 3.4028234663852886e38   # Paddle's learning-rate var is float32: a larger rate is inf there


class Schedule:
    """A learning rate for each run (step 0, 1, ...)."""

    def __call__(self, step: int) -> float:
        raise NotImplementedError


def rate_at(schedule, step: int) -> float:
    """``schedule(step)``, refused where it overflows or is not a finite float32 number: a decay whose gamma grows
    the rate (ExponentialDecay(gamma=10)) would make every weight inf or NaN at that update, unsaid."""
    try:
        rate = float(schedule(step))
    except OverflowError:   # float ** int and math.exp raise where the result leaves the float range
        rate = math.inf
    if not abs(rate) <= FLOAT32_MAX:
        raise GradcError(f"the learning-rate schedule gives {rate} at step {step}: not a finite float32 number (the "
                         f"learning rate of Paddle's programs): check its gamma, factor or values")
    return rate


# a program in memory -> the schedule its optimizer was given, whose step-0 rate alone the program holds
_MINIMIZED_WITH: WeakKeyDictionary = WeakKeyDictionary()


def remember_schedule(program, schedule: Schedule) -> None:
    _MINIMIZED_WITH[program] = schedule


def minimized_with(program) -> Schedule | None:
    """The host schedule ``program`` was minimized with (Paddle's optimizer holds its LRScheduler), if any."""
    return _MINIMIZED_WITH.get(program)
