"""Training over data, evaluation, checkpoints, parameters in and out of a Scope, and export for inference."""

from .checkpoint import load_checkpoint, save_checkpoint
from .data import Dataset, OneBatch
from .export import export, inference_program
from .history import History, Reporter
from .params import load_params, read_values, save_params
from .programs import forward_part, model_parameters, prune
from .trainer import Trainer, train

__all__ = ["Dataset", "History", "OneBatch", "Reporter", "Trainer", "export", "forward_part", "inference_program",
           "load_checkpoint", "load_params", "model_parameters", "prune", "read_values", "save_checkpoint",
           "save_params", "train"]
