"""What `gradc train` keeps when Ctrl-C stops it between two steps: a checkpoint (in a new PROGRAM.interrupted
directory without --checkpoint-dir) and --save-params, and what it says of them."""

from __future__ import annotations

from pathlib import Path

from ..errors import GradcError
from ..training import Trainer
from ..training import save_params as write_model_params
from ..training.interrupt import Stopped


def kept_after_interrupt(trainer: Trainer, stop: Stopped, program: str, checkpoint_dir,
                         save_params) -> tuple[str, Path | str | None]:
    """Ctrl-C between two steps keeps the training done: without --checkpoint-dir a checkpoint goes to a new
    PROGRAM.interrupted directory here (as --checkpoint-dir would have kept one), and --save-params is written.
    What to say, and the directory the checkpoint is in (None: none could be saved)."""
    said, directory = str(stop), checkpoint_dir
    if not checkpoint_dir:
        directory = _fresh_directory(Path(Path(program).stem + ".interrupted"))
        try:
            trainer.save_checkpoint(directory)
            said = (f"interrupted after {stop.where}; checkpoint saved in {directory} (continue with the same command "
                    f"and --resume {directory})")
        except GradcError as exc:
            said, directory = f"interrupted after {stop.where}; no checkpoint saved: {exc}", None
    if save_params:
        write_model_params(trainer.scope, save_params, trainer.program)
        said += f"; wrote {save_params} (the model parameters after step {stop.step})"
    return said, directory


def _fresh_directory(wanted: Path) -> Path:
    """``wanted``, or ``wanted-2``, ``-3``, ...: a directory no earlier run's checkpoints are in (a resume takes the
    checkpoint of the highest step, which could be another run's)."""
    candidate, number = wanted, 1
    while candidate.exists():
        number += 1
        candidate = wanted.with_name(f"{wanted.name}-{number}")
    return candidate
