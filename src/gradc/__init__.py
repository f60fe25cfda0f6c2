"""gradc: compile PaddlePaddle ProgramDescs into training programs, and run them with numpy.

    prog = gradc.load("forward.pb")
    pairs = gradc.append_backward(prog, loss="mean_0.tmp_0")
    gradc.save(prog, "train.pb")
    loss, gw = gradc.Executor().run(prog, feed={...}, fetch_list=["mean_0.tmp_0", "fc_0.w_0@GRAD"])
"""

from . import ops  # noqa: F401  (registers the built-in ops)
from .backward import append_backward, gradients, loss_candidates
from .errors import ExecutionError, FormatError, GradcError, GradError, OutputError, ProgramError
from .executor import Executor, Scope, global_scope, kernel
from .io import load, save
from .io.pdiparams import read_params, write_params
from .ir import Block, OpDesc, Program, VarDesc, VarType
from .passes.recompute import recompute
from .registry import NO_GRAD, GradContext, OpDef, defop, grad_op, register_op

__version__ = "0.1.0"

__all__ = [
    "NO_GRAD", "Block", "ExecutionError", "Executor", "FormatError", "GradContext", "GradError",
    "GradcError", "OpDef", "OpDesc", "OutputError", "Program", "ProgramError", "Scope", "VarDesc", "VarType",
    "append_backward", "defop", "global_scope", "grad_op", "gradients", "kernel", "load",
    "loss_candidates", "read_params", "recompute", "register_op", "save", "write_params",
]
