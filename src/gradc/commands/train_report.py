"""`gradc train --json`: JSON lines, one object per logged step and per epoch as training goes, then one for the
end (a training loop is a stream: a script follows it; a run stopped by an error has no "end" object, one stopped by
Ctrl-C has one saying so). Each is one strict JSON object on its own line; the schema is in docs/tools.md."""

from __future__ import annotations

import time

from ..training.grad_norms import total_norm
from ..training.history import History, Reporter
from .json_output import emit, number


def _values(names, values) -> dict:
    return {name: number(value) for name, value in zip(names, values)}


class JsonLinesReporter(Reporter):
    """The steps logged are the ones the text logs without a terminal: every ``log_every``-th and an epoch's last."""

    def __init__(self, log_every: int = 1):
        self.log_every = log_every
        self.early_stopped = False

    def begin(self, trainer, epochs, batches, single_batch, steps):
        self.trainer, self.names, self.batches, self.single = trainer, trainer.fetch, batches, single_batch
        self.total_steps = steps if single_batch and steps else epochs * batches
        self.epoch_started = time.perf_counter()

    def epoch_begin(self, epoch, batch):
        self.epoch_started = time.perf_counter()

    def step(self, step, epoch, batch, values):
        if self.single and (step % self.log_every == 0 or step == self.total_steps):
            emit({"event": "step", "step": step, "epoch": None, "batch": None, "values": _values(self.names, values),
                  **self._grad_norms()})
        elif not self.single and (batch % self.log_every == 0 or batch == self.batches):
            emit({"event": "step", "step": step, "epoch": epoch + 1, "batch": batch,
                  "values": _values(self.names, values), **self._grad_norms()})

    def _grad_norms(self) -> dict:
        """--log-grad-norms: the global norm and each parameter's, in the program's order."""
        norms = self.trainer.grad_norms
        if not norms:
            return {}
        return {"grad_norms": {"total": number(total_norm(norms)),
                               "parameters": {param: number(norm) for param, norm in norms.items()}}}

    def epoch_end(self, epoch, record):
        if not self.single:
            emit({"event": "epoch", "epoch": epoch + 1, "step": record["step"],
                  "train": _values(record["train"], record["train"].values()),
                  "eval": _values(record["eval"], record["eval"].values()),
                  **({"learning_rate": record["learning_rate"]} if "learning_rate" in record else {}),
                  "seconds": time.perf_counter() - self.epoch_started})

    def stopped_early(self, history: History, name: str, patience: int):
        self.early_stopped = True

    def emit_end(self, history: History, saved_params: str | None, plot: str | None, checkpoint_dir: str | None,
                 interrupted: bool = False) -> None:
        """The last line, once every file is written: the run's totals, its last step and evaluation, where it
        saved, and whether Ctrl-C stopped it (between two steps: the totals are those of the steps done)."""
        last = _values(history.fetch, history.steps[-1]) if history.steps else {}
        emit({"event": "end", "steps": len(history.steps), "epochs": None if self.single else len(history.epochs),
              "examples": history.examples, "seconds": history.seconds, "last": last,
              "eval": _values(history.last_eval, history.last_eval.values()), "stopped_early": self.early_stopped,
              "interrupted": interrupted,
              "kept_epoch": history.kept_epoch, "checkpoint_dir": checkpoint_dir, "saved_params": saved_params,
              "plot": plot})
