"""Paddle's schedulers that rise and fall (OneCycleLR, CyclicLR, CosineAnnealingWarmRestarts) and LinearLR, in
closed form: the value Paddle's scheduler gives at run ``step`` after ``step`` calls of its step(), for
gradc.schedules.make / parse. The formulas are Paddle 3.3.1's (paddle/optimizer/lr.py)."""

from __future__ import annotations

import math

from .errors import GradcError
from .schedule_base import Schedule


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise GradcError(message)


class OneCycleLR(Schedule):
    """From max/divide_factor up to max_learning_rate over phase_pct of total_steps, then down to
    end_learning_rate (three_phase: back to the start first); cosine or linear annealing within a phase."""

    def __init__(self, max_learning_rate, total_steps, divide_factor=25.0, end_learning_rate=0.0001,
                 phase_pct=0.3, anneal_strategy="cos", three_phase=False):
        _check(isinstance(total_steps, int) and total_steps > 0, f"OneCycleLR: total_steps must be a positive "
               f"integer, not {total_steps!r}")
        _check(0 <= phase_pct <= (0.5 if three_phase else 1), f"OneCycleLR: phase_pct must be in [0, 1] (below 0.5 "
               f"with three_phase), not {phase_pct!r}")
        _check(anneal_strategy in ("cos", "linear"), f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', not "
               f"{anneal_strategy!r}")
        start, top, end = max_learning_rate / float(divide_factor), float(max_learning_rate), float(end_learning_rate)
        rise, last = phase_pct * total_steps - 1, total_steps - 1
        # (first step, steps, from rate, to rate) of each phase; the last one runs on to step total_steps
        if three_phase:
            fall = 2 * phase_pct * total_steps - 2
            self.phases = [(0, rise, start, top), (rise, fall - rise, top, start), (fall, last - fall, start, end)]
        else:
            self.phases = [(0, rise, start, top), (rise, last - rise, top, end)]
        self.total_steps, self.linear = total_steps, anneal_strategy == "linear"

    def __call__(self, step):
        if step > self.total_steps:
            raise GradcError(f"OneCycleLR(total_steps={self.total_steps}) gives {self.total_steps + 1} learning rates "
                             f"and step {step + 1} needs one (Paddle's refuses it too): train at most "
                             f"{self.total_steps + 1} steps, or give a larger total_steps")
        first, steps, from_rate, to_rate = next((phase for phase in self.phases[:-1] if step <= phase[0] + phase[1]),
                                                self.phases[-1])
        fraction = (step - first) / steps if steps else 1.0   # a phase of no steps: Paddle divides by 0
        if self.linear:
            return (to_rate - from_rate) * fraction + from_rate
        return to_rate + (from_rate - to_rate) / 2.0 * (math.cos(math.pi * fraction) + 1)


class CyclicLR(Schedule):
    """Triangles between base_learning_rate and max_learning_rate (step_size_up up, step_size_down down), their
    height scaled per cycle (triangular2: halved each cycle) or per step (exp_range: exp_gamma ** step)."""

    def __init__(self, base_learning_rate, max_learning_rate, step_size_up, step_size_down=None, mode="triangular",
                 exp_gamma=1.0):
        _check(mode in ("triangular", "triangular2", "exp_range"), f"CyclicLR: mode must be triangular, triangular2 "
               f"or exp_range, not {mode!r} (a scale_fn of your own is Python: give gradc.schedules.Values instead)")
        _check(isinstance(step_size_up, int) and step_size_up > 0, f"CyclicLR: step_size_up must be a positive "
               f"integer, not {step_size_up!r}")
        down = step_size_up if step_size_down is None else step_size_down
        self.base, self.amplitude = float(base_learning_rate), float(max_learning_rate) - float(base_learning_rate)
        self.cycle_size, self.up = step_size_up + down, step_size_up / (step_size_up + down)
        self.mode, self.gamma = mode, exp_gamma

    def __call__(self, step):
        cycle = 1 + step // self.cycle_size
        position = 1.0 + step / self.cycle_size - cycle
        height = position / self.up if position <= self.up else (1 - position) / (1 - self.up)
        scale = {"triangular": 1.0, "triangular2": 1 / 2.0 ** (cycle - 1), "exp_range": self.gamma ** step}[self.mode]
        return self.base + self.amplitude * height * scale


class LinearLR(Schedule):
    """learning_rate * (start_factor + (end_factor - start_factor) * min(step, total_steps) / total_steps): the
    product Paddle's recursion multiplies out to."""

    def __init__(self, learning_rate, total_steps, start_factor=1.0 / 3, end_factor=1.0):
        _check(0 < start_factor <= 1 and 0 <= end_factor <= 1 and total_steps > 0, "LinearLR: start_factor must be "
               "in (0, 1], end_factor in [0, 1] and total_steps positive")
        self.base, self.total_steps, self.start, self.end = float(learning_rate), total_steps, start_factor, end_factor

    def __call__(self, step):
        return self.base * (self.start + (self.end - self.start) * min(step, self.total_steps) / self.total_steps)


class CosineAnnealingWarmRestarts(Schedule):
    """Cosine from learning_rate to eta_min over T_0 steps, restarting; each period T_mult times the last."""

    def __init__(self, learning_rate, T_0, T_mult=1, eta_min=0.0):  # noqa: N803 - Paddle's argument names
        _check(isinstance(T_0, int) and T_0 > 0 and isinstance(T_mult, int) and T_mult >= 1,
               f"CosineAnnealingWarmRestarts: T_0 must be a positive integer and T_mult an integer >= 1, not "
               f"{T_0!r} and {T_mult!r}")
        self.base, self.period, self.growth, self.eta_min = float(learning_rate), T_0, T_mult, float(eta_min)

    def __call__(self, step):
        position, period = step, self.period
        while position >= period:   # step() by step, as Paddle's T_cur and T_i move
            position, period = position - period, period * self.growth
        return self.eta_min + (self.base - self.eta_min) * (1 + math.cos(math.pi * position / period)) / 2
