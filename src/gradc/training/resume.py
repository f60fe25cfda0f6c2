"""Resuming a Trainer from a checkpoint (``fit(resume=DIR)``, ``gradc train --resume``): its values, where it stood,
its history, and what follows from them (L-BFGS's memory, Paddle's random stream, ReduceOnPlateau's rate, early
stopping's best parameters), after refusing a checkpoint of another program or other settings."""

from __future__ import annotations

from .. import schedules_plateau
from ..executor import randomness
from .best import split_best
from .checkpoint import check_settings, checked_checkpoint, load_checkpoint
from .history import History
from .lbfgs import split_lbfgs
from .params import checked_param
from .set_metrics import set_kinds


def resume_from(trainer, directory, settings: dict) -> None:
    """Set ``trainer`` where the newest checkpoint in ``directory`` stands; ``settings``: the fit's, which must be
    the checkpoint's (check_settings)."""
    values, state, path = load_checkpoint(directory)
    values, best = split_best(values)
    values, lbfgs = split_lbfgs(values)
    program = trainer.program
    values = checked_checkpoint(program, values, path)
    check_settings(path, state, settings)
    for name, value in values.items():
        trainer.scope[name] = value
    trainer.epoch, trainer.batch, trainer.step = state["epoch"], state["batch"], state["step"]
    if trainer.lbfgs is not None:
        trainer.lbfgs.resume(lbfgs)
    if trainer.paddle_stream:
        randomness.restore(state["random"])
    kinds = set_kinds(program, trainer.fetch, trainer.executor, trainer.scope)
    trainer.history = History.from_state(trainer.fetch, state.get("history") or {}, **kinds)
    for record in trainer.history.epochs:   # ReduceOnPlateau's state is its epochs' values
        schedules_plateau.after_epoch(trainer.schedule, record, trainer.fetch)
    if trainer.early_stopping:
        trainer.early_stopping.resume({name: checked_param(program, name, value, str(path.with_suffix(".npz")))
                                       for name, value in best.items()}, trainer.history)
