"""The weights of paddle.static.ExponentialMovingAverage, as its apply() gives them: each parameter's average
(its var ``PARAM_ema_N``) divided by 1 - decay^steps, the bias correction of an average that started at 0."""

from __future__ import annotations

import re

import numpy as np

from ..errors import GradcError
from ..executor import Scope
from ..ir import Program

STEP_COUNTER, DECAY = "@EMA_STEP_COUNTER@", "scheduled_ema_decay_rate"   # the vars Paddle's EMA creates
_AVERAGE = re.compile(r"^(?P<param>.+)_ema_\d+$")


def require_ema(program: Program, path: str) -> None:
    """Refuses a program without Paddle's EMA (named after ``path``, the file it was loaded from)."""
    missing = [name for name in (STEP_COUNTER, DECAY) if program.global_block.find_var(name) is None]
    if missing:
        raise GradcError(f"'{path}' keeps no exponential moving average (no var {missing[0]}): "
                         f"paddle.static.ExponentialMovingAverage(decay).update() after minimize adds one")


def ema_applied(scope: Scope) -> Scope:
    """A scope of ``scope``'s values with each parameter that has an average replaced by its bias-corrected value."""
    values = scope.vars
    steps = int(np.asarray(values[STEP_COUNTER]).reshape(-1)[0])
    decay = np.asarray(values[DECAY], np.float32).reshape(-1)[0]
    divisor = np.float32(1) - np.power(decay, np.float32(steps)) if steps > 0 else np.float32(1)
    applied = Scope()
    applied.vars.update(values)
    for name, value in values.items():
        match = _AVERAGE.match(name)
        if match and match["param"] in values:
            applied.vars[match["param"]] = (np.asarray(value) / divisor).astype(np.asarray(value).dtype)
    return applied
