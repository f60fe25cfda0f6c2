"""gradc: compile PaddlePaddle ProgramDescs into training programs, and run them with numpy.

    prog = gradc.load("forward.pb")
    startup = gradc.minimize(prog, "mean_0.tmp_0", "adam", lr=0.01)    # backward + updates
    history = gradc.train(prog, "train.npz", ["startup.pb", startup], epochs=5, batch_size=64)
    gradc.export(prog, "model", feeds=["x"], fetches=["fc_1.tmp_1"], scope=scope)
"""

from . import ops  # noqa: F401  (registers the built-in ops)
from .backward import append_backward, gradients, loss_candidates
from .errors import ExecutionError, FormatError, GradcError, GradError, OutputError, ProgramError
from .executor import Executor, Scope, SelectedRows, global_scope, kernel
from .io import load, save
from .io.pdiparams import read_params, write_params
from .ir import Block, OpDesc, Program, VarDesc, VarType
from .layers import ProgramBuilder
from .ops.infer import same_as
from .optimizers import minimize
from .passes.recompute import recompute
from .registry import NO_GRAD, GradContext, OpDef, defop, grad_op, register_op
from .training import Dataset, History, Trainer, export, load_params, save_params, train
from .verification import verify  # the function: gradc.verify(program); checks stay in the module gradc.verify

__version__ = "0.1.0"

__all__ = [
    "NO_GRAD", "Block", "Dataset", "ExecutionError", "Executor", "FormatError", "GradContext", "GradError",
    "GradcError", "History", "OpDef", "OpDesc", "OutputError", "Program", "ProgramBuilder", "ProgramError", "Scope",
    "SelectedRows", "Trainer", "VarDesc", "VarType", "append_backward", "defop", "export", "global_scope", "grad_op",
    "gradients", "kernel", "load", "load_params", "loss_candidates", "minimize", "read_params", "recompute",
    "register_op", "same_as", "save", "save_params", "train", "verify", "write_params",
]
