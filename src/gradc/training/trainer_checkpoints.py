"""A Trainer's checkpoints: what one holds (the program's values in the scope, where the run stands, its history,
early stopping's best values, L-BFGS's memory, Paddle's random stream), saving one, and the stop Ctrl-C asks for
between two steps. resume.py reads them back."""

from __future__ import annotations

import time

import numpy as np

from ..errors import GradcError
from ..executor import randomness
from .checkpoint import checkpoint_directory, save_checkpoint
from .interrupt import Stopped


class TrainerCheckpoints:
    """Trainer's checkpoint methods, kept apart; they read the Trainer's state (program, scope, epoch, batch, step,
    history, early_stopping, lbfgs, the last fit's settings and its clock)."""

    def persistable_values(self) -> dict[str, np.ndarray]:
        """The arrays of the scope that are vars of the program (not another program's values loaded beside)."""
        block = self.program.global_block
        return {name: np.asarray(value) for name, value in self.scope.vars.items()
                if isinstance(value, np.ndarray) and block.find_var(name) is not None}

    def _count_time(self) -> None:
        """Add the time since the last count to the history (a checkpoint keeps it: a resumed run's rate is whole)."""
        now = time.perf_counter()
        self.history.seconds += now - self._clock
        self._clock = now

    def _save(self, directory, settings: dict) -> int:
        self._count_time()
        state = {"epoch": self.epoch, "batch": self.batch, "step": self.step, "settings": settings,
                 "history": self.history.state(), **({"random": randomness.snapshot()} if self.paddle_stream else {})}
        best = self.early_stopping.checkpoint_values() if self.early_stopping else {}
        lbfgs = self.lbfgs.checkpoint_values() if self.lbfgs is not None else {}
        save_checkpoint(directory, {**self.persistable_values(), **best, **lbfgs}, state)
        return self.step

    def save_checkpoint(self, directory) -> None:
        """A checkpoint of where the last ``fit`` stands (after an interruption, say), which ``resume=`` continues."""
        if self._settings is None:
            raise GradcError("no checkpoint before fit: a checkpoint records where a fit stands")
        self._save(checkpoint_directory(directory), self._settings)

    def _stop(self, directory, settings: dict, saved_at: int | None) -> None:
        self._count_time()   # the history's seconds include the steps done, whoever reports them
        where = f"step {self.step} (epoch {self.epoch + 1}, batch {self.batch})"
        if not directory:   # the scope is whole: the caller may still save it (gradc train does)
            raise Stopped(f"interrupted after {where}; no checkpoint_dir, so nothing saved: the trainer's scope holds "
                          f"the parameters (gradc.save_params, or trainer.save_checkpoint(DIR) to resume)",
                          self.step, where)
        if saved_at != self.step:
            self._save(directory, settings)
        raise Stopped(f"interrupted after {where}; checkpoint saved in {directory} "
                      f"(continue with --resume {directory})", self.step, where)
