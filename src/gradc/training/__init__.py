"""Training over data, evaluation, checkpoints, parameters in and out of a Scope, and export for inference. Each
name imports its module on first use, so a command that reads parameters (`gradc run`) does not import the
trainer, checkpoints and export (nor the backward and optimizers they read roles from)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..firstuse import on_first_use

if TYPE_CHECKING:   # what __getattr__ imports on first use, for type checkers and editors
    from .checkpoint import load_checkpoint, save_checkpoint
    from .data import Dataset, OneBatch
    from .evaluation import evaluate
    from .finetune import add_loss, set_train_mode
    from .history import History, Reporter
    from .inference import export, inference_program
    from .lbfgs import LBFGS
    from .params import load_params, read_values, save_params
    from .programs import forward_part, model_parameters, prune, set_test_mode
    from .trainer import Trainer, train

_ON_FIRST_USE = {
    **dict.fromkeys(["add_loss", "set_train_mode"], ".finetune"),
    **dict.fromkeys(["load_checkpoint", "save_checkpoint"], ".checkpoint"),
    **dict.fromkeys(["Dataset", "OneBatch"], ".data"),
    "evaluate": ".evaluation",
    **dict.fromkeys(["export", "inference_program"], ".inference"),
    "LBFGS": ".lbfgs",
    **dict.fromkeys(["History", "Reporter"], ".history"),
    **dict.fromkeys(["load_params", "read_values", "save_params"], ".params"),
    **dict.fromkeys(["forward_part", "model_parameters", "prune", "set_test_mode"], ".programs"),
    **dict.fromkeys(["Trainer", "train"], ".trainer"),
}
__all__ = ["LBFGS", "Dataset", "History", "OneBatch", "Reporter", "Trainer", "add_loss", "evaluate", "export",
           "forward_part", "inference_program", "load_checkpoint", "load_params", "model_parameters", "prune",
           "read_values", "save_checkpoint", "save_params", "set_test_mode", "set_train_mode", "train"]
__getattr__, __dir__ = on_first_use(__name__, _ON_FIRST_USE, globals())
