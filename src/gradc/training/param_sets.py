"""Which of a program's persistable vars a parameter file holds: the model's (.pdparams, .pdiparams: the forward
part's but the auc ops' counts, and parameters only training ops read) or the optimizer's state (.pdopt), as
paddle.static.save splits them; and the program a .pdiparams of those vars is read and written against, one whose
persistable vars are exactly them, in the file's order."""

from __future__ import annotations

from ..errors import GradcError
from ..io.pdiparams import persistable_names
from ..ir import Program


def model_params(program: Program, forward: Program) -> list[str]:
    """The forward part's persistable vars but the auc ops' counts, and the vars the program marks parameters that
    only its training ops read (paddle.incubate.asp's 2:4 masks, multiplied into the weights after each update): what
    paddle.static.save writes to .pdparams, so that a run resumed from the file keeps the masks."""
    declared = {name: var for block in program.blocks for name, var in block.vars.items()}
    read = {name for block in program.blocks for op in block.ops for name in op.input_names()}
    model = _forward_model(forward)
    return model + [name for name in persistable_names(program)
                    if declared[name].is_parameter and name in read and name not in model]


def optimizer_state(program: Program, forward: Program) -> list[str]:
    """What paddle.static.save writes to .pdopt: every persistable var but the parameters (accumulators, learning
    rate, step counters, EMA and gradient-merge state, the auc ops' counts), so that .pdparams and .pdopt together
    resume a run."""
    declared = {name: var for block in program.blocks for name, var in block.vars.items()}
    marked = any(var.is_parameter for var in declared.values())   # Paddle's programs mark them; others: the model's
    model = set(_forward_model(forward))
    return [name for name in persistable_names(program)
            if not (declared[name].is_parameter if marked else name in model)]


def _forward_model(forward: Program) -> list[str]:
    """The forward part's persistables but the auc ops' running counts, a metric's state no prediction reads, which
    paddle.static.save writes to .pdopt (they are no Parameter) and an evaluation counts from zero."""
    from .set_metrics import auc_counts  # and the pruning it shares with evaluation: only for a save
    counts = set(auc_counts(forward)[0])
    return [name for name in persistable_names(forward) if name not in counts]


def holding_program(program: Program, forward: Program, names: list[str]) -> Program:
    """A program whose persistable vars are exactly ``names`` (the order a .pdiparams file is in)."""
    holder = Program()
    for name in names:
        var = forward.global_block.find_var(name) or program.global_block.find_var(name)
        if var is None:
            raise GradcError(f"cannot save '{name}' in a .pdiparams: the program has no such var")
        copy = holder.global_block.add_var(var.copy())
        copy.persistable = True
    return holder
