"""Paddle's ReduceOnPlateau: the one scheduler whose rate follows a measured value, not the step. Paddle's user calls
``scheduler.step(metric)`` once an epoch (``schedule.step(metric)`` here); gradc's trainer does it after each epoch
with the epoch's value of the loss (its evaluation with eval data, else the mean training loss), and replays the
history's epochs on resuming. The rules are Paddle 3.3.1's (paddle/optimizer/lr.py)."""

from __future__ import annotations

from collections.abc import Sequence

from .errors import GradcError
from .schedule_base import Schedule


class ReduceOnPlateau(Schedule):
    """The rate times ``factor`` (not below ``min_lr``) once the metric has not improved by ``threshold`` (relative
    or absolute) for more than ``patience`` epochs, then ``cooldown`` epochs without counting."""

    observes_metric = True

    def __init__(self, learning_rate, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, epsilon=1e-8):
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise GradcError(f"ReduceOnPlateau: mode must be 'min' or 'max' and threshold_mode 'rel' or 'abs', not "
                             f"{mode!r} and {threshold_mode!r}")
        if not factor < 1.0:
            raise GradcError(f"ReduceOnPlateau: factor must be below 1 (the new rate is the rate times it), not "
                             f"{factor!r}")
        self.mode, self.factor, self.patience, self.threshold = mode, float(factor), patience, float(threshold)
        self.threshold_mode, self.cooldown, self.min_lr, self.epsilon = threshold_mode, cooldown, min_lr, epsilon
        self.last_lr = float(learning_rate)
        self.best: float | None = None
        self.bad_epochs = self.cooldown_left = 0

    def __call__(self, step):
        return self.last_lr

    def step(self, metric: float) -> None:
        """After an epoch, with its value of the watched metric (Paddle's ``scheduler.step(metrics)``)."""
        if self.cooldown_left > 0:
            self.cooldown_left -= 1
            return
        if self.best is None or self._better(metric, self.best):
            self.best, self.bad_epochs = metric, 0
        else:
            self.bad_epochs += 1
        if self.bad_epochs > self.patience:
            self.cooldown_left, self.bad_epochs = self.cooldown, 0
            reduced = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - reduced > self.epsilon:
                self.last_lr = reduced

    def _better(self, current: float, best: float) -> bool:
        margin = best * self.threshold if self.threshold_mode == "rel" else self.threshold   # Paddle's: no abs()
        return current < best - margin if self.mode == "min" else current > best + margin


def check_watched(schedule, fetch: Sequence[str]) -> None:
    """A schedule that watches the loss needs one to watch."""
    if getattr(schedule, "observes_metric", False) and not fetch:
        raise GradcError("ReduceOnPlateau watches the loss after each epoch, and the program has no scalar loss gradc "
                         "can pick: name it with --fetch NAME (fetch= in Python)")


def after_epoch(schedule, record: dict, fetch: Sequence[str]) -> None:
    """Step a watching schedule with the epoch's value of the loss (the first fetched var): its evaluation if there
    was one, else its mean over the epoch's steps. A reduced rate goes into the epoch's record, which the reports
    show."""
    if getattr(schedule, "observes_metric", False):
        before = schedule.last_lr
        schedule.step(float((record.get("eval") or {}).get(fetch[0], record["train"][fetch[0]])))
        if schedule.last_lr != before:
            record["learning_rate"] = schedule.last_lr
