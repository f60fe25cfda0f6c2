"""Early stopping that keeps the best epoch: the evaluated scalar it watches (the loss, or a metric the user names:
higher is better for an accuracy or auc op's output, as Paddle's EarlyStopping's mode 'auto' decides by the name),
how many epochs since it last improved (read from the history), and a copy of the model parameters of the best
epoch, which each checkpoint keeps beside the current values (so a resumed run ends with the same ones) and which
the trainer puts back when the run ends."""

from __future__ import annotations

import numpy as np

from ..errors import GradcError
from ..ir import Program
from .history import History
from .programs import model_parameters

PREFIX = "@best@/"   # a checkpoint's arrays of the best epoch; no var of a Paddle program is named so
HIGHER_IS_BETTER = {"accuracy", "auc"}


def higher_is_better(program: Program, name: str) -> bool:
    return any(op.type in HIGHER_IS_BETTER and name in op.output_names() for op in program.global_block.ops)


def split_best(values: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A checkpoint's arrays: (the current values, the best epoch's by var name)."""
    best = {name[len(PREFIX):]: value for name, value in values.items() if name.startswith(PREFIX)}
    return {name: value for name, value in values.items() if not name.startswith(PREFIX)}, best


class EarlyStopping:
    def __init__(self, program: Program, monitor: str, patience: int, fetched: list[str], metrics: list[str] = (),
                 lower_metrics: list[str] = ()):
        """``metrics``: the evaluation's names beside the fetched vars (the accuracy, mIoU, recall@k: higher is
        better); ``lower_metrics`` those of them lower is better of (a pose model's mean keypoint error)."""
        if monitor not in fetched and monitor not in metrics:
            raise GradcError(f"early stopping watches '{monitor}', which is not fetched (the fetched vars: "
                             f"{', '.join(fetched) or 'none'}): fetch it too (--fetch {monitor})"
                             + (f", or watch a metric of the evaluation ({', '.join(metrics)})" if metrics else ""))
        self.monitor, self.patience = monitor, patience
        self.higher = higher_is_better(program, monitor) or monitor in metrics and monitor not in lower_metrics
        self.names = model_parameters(program)
        self.values: dict[str, np.ndarray] = {}
        self.epoch: int | None = None   # the epoch (from 1) whose parameters ``values`` holds

    def best(self, history: History) -> dict | None:
        return history.best_epoch(self.monitor, self.higher)

    def stale(self, history: History) -> bool:
        """No better evaluation for ``patience`` epochs."""
        return history.epochs_since_best(self.monitor, self.higher) >= self.patience

    def after_epoch(self, history: History, scope) -> None:
        """Copy the parameters when the epoch just evaluated is the best so far."""
        best = self.best(history)
        if best is not None and best["epoch"] == history.epochs[-1]["epoch"]:
            self.values = {name: np.array(scope[name]) for name in self.names if scope.find(name) is not None}
            self.epoch = best["epoch"]

    def checkpoint_values(self) -> dict[str, np.ndarray]:
        return {PREFIX + name: value for name, value in self.values.items()}

    def resume(self, best: dict[str, np.ndarray], history: History) -> None:
        """The best epoch's parameters a checkpoint kept (the settings make sure it was an early-stopping run's)."""
        record = self.best(history)
        self.values, self.epoch = best, record["epoch"] if record is not None else None

    def restore(self, scope, history: History) -> dict | None:
        """Put the best epoch's parameters back into ``scope``; return that epoch's record (None before any)."""
        for name, value in self.values.items():
            scope[name] = value
        return self.best(history) if self.values else None
