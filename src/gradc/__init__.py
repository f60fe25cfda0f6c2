"""gradc: compile PaddlePaddle ProgramDescs into training programs, and run them with numpy.

    prog = gradc.load("forward.pb")
    startup = gradc.minimize(prog, "mean_0.tmp_0", "adam", lr=0.01)    # backward + updates
    history = gradc.train(prog, "train.npz", ["startup.pb", startup], epochs=5, batch_size=64)
    gradc.export(prog, "model", feeds=["x"], fetches=["fc_1.tmp_1"], scope=scope)

The IR, loading and saving, the op registry and verification are imported with the package; the backward, the
optimizers, the program builder, the executor and the training workflow (which bring numpy) on first use, so a
command pays only for what it uses.
"""

from typing import TYPE_CHECKING

from . import ops  # noqa: F401  (registers the built-in ops)
from .errors import ExecutionError, FormatError, GradcError, GradcWarning, GradError, OutputError, ProgramError
from .firstuse import on_first_use
from .io import load, save
from .ir import Block, OpDesc, Program, VarDesc, VarType
from .ops.infer import same_as
from .registry import NO_GRAD, GradContext, OpDef, defop, grad_op, register_op
from .verification import verify  # the function: gradc.verify(program); checks stay in the module gradc.verify

if TYPE_CHECKING:   # what __getattr__ imports on first use, for type checkers and editors
    from .backward import append_backward, gradients, loss_candidates
    from .executor import Executor, LoDTensor, Scope, SelectedRows, global_scope, kernel
    from .executor.py_funcs import register_py_func
    from .executor.randomness import seed
    from .io.pdiparams import read_params, write_params
    from .layers import ProgramBuilder
    from .optimizers import minimize
    from .passes.recompute import recompute
    from .training import LBFGS, Dataset, History, Trainer, add_loss, evaluate, export, load_params, save_params, train
    from .training.finetune import set_train_mode
    from .training.programs import set_test_mode

__version__ = "0.1.0"

_ON_FIRST_USE = {
    **dict.fromkeys(["append_backward", "gradients", "loss_candidates"], ".backward"),
    "ProgramBuilder": ".layers", "minimize": ".optimizers", "recompute": ".passes.recompute",
    "seed": ".executor.randomness", "register_py_func": ".executor.py_funcs",
    **dict.fromkeys(["Executor", "LoDTensor", "Scope", "SelectedRows", "global_scope", "kernel"], ".executor"),
    **dict.fromkeys(["read_params", "write_params"], ".io.pdiparams"),
    **dict.fromkeys(["LBFGS", "Dataset", "History", "Trainer", "add_loss", "evaluate", "export", "load_params",
                     "save_params", "set_test_mode", "set_train_mode", "train"], ".training"),
}
__getattr__, __dir__ = on_first_use(__name__, _ON_FIRST_USE, globals())

__all__ = [
    "NO_GRAD", "Block", "Dataset", "ExecutionError", "Executor", "FormatError", "GradContext", "GradError",
    "GradcError", "GradcWarning", "History", "LBFGS", "LoDTensor",
    "OpDef", "OpDesc", "OutputError", "Program", "ProgramBuilder", "ProgramError", "Scope",
    "SelectedRows", "Trainer", "VarDesc", "VarType", "add_loss", "append_backward", "defop", "evaluate", "export",
    "global_scope",
    "grad_op", "gradients", "kernel", "load", "load_params", "loss_candidates", "minimize", "read_params", "recompute",
    "register_op", "register_py_func", "same_as", "save", "save_params", "seed", "set_test_mode", "set_train_mode",
    "train",
    "verify", "write_params",
]
