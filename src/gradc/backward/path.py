"""Which ops to differentiate: those on a path from a differentiable var to the loss.

Two linear sweeps over the block: backward from the loss (what the loss depends on) and
forward from the differentiable leaves (what depends on something that wants a gradient).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import registry
from ..ir import FLOAT_DTYPES, Block, OpDesc


@dataclass
class OpPath:
    op_indices: list[int]   # forward ops to differentiate, in program order
    wants_grad: set[str]    # vars whose gradient is computed
    no_grad: set[str] = field(default_factory=set)   # the user's no-grad set, for sub-blocks
    sub_paths: dict = field(default_factory=dict)    # sub-block paths found so far, shared by a whole pass

    def __contains__(self, name: str) -> bool:
        return name in self.wants_grad


def is_differentiable_var(block: Block, name: str, no_grad: set[str]) -> bool:
    var = block.find_var(name)
    return (var is not None and name not in no_grad and not var.stop_gradient
            and var.dtype in FLOAT_DTYPES)


class _DifferentiableVars(dict):
    """name -> is_differentiable_var, each name asked once."""

    def __init__(self, block: Block, no_grad: set[str]):
        super().__init__()
        self.block, self.no_grad = block, no_grad

    def __missing__(self, name: str) -> bool:
        result = self[name] = is_differentiable_var(self.block, name, self.no_grad)
        return result


def differentiable_inputs(op: OpDesc) -> list[str]:
    opdef = registry.get(op.type)
    skip = opdef.no_grad_inputs if opdef is not None else frozenset()
    return [n for slot, args in op.inputs.items() if slot not in skip for n in args]


def find_path(block: Block, ops: list[OpDesc], targets: set[str], no_grad: set[str],
              leaves: set[str] | None = None, sub_paths: dict | None = None) -> OpPath:
    """Ops among ``ops`` (the block's ops up to the loss) on a path from a leaf to ``targets``.
    Leaves are the differentiable vars read before any op writes them, unless given (a sub-block:
    the outer vars that want a gradient). A name an op overwrites starts a new value: it depends on
    a leaf only if that op carries one."""
    sub_paths = {} if sub_paths is None else sub_paths
    carries = set(leaves or ())   # vars whose current value depends on a differentiable leaf
    written: set[str] = set()
    carried_inputs = []           # per op: its differentiable inputs that carry when it runs
    outputs_of = [list(op.output_names()) for op in ops]
    differentiable = _DifferentiableVars(block, no_grad)
    for op, outputs in zip(ops, outputs_of):
        inputs = differentiable_inputs(op)
        if leaves is None:
            carries.update(n for n in inputs if n not in written and differentiable[n])
            written.update(outputs)
        opdef = registry.get(op.type)
        carried = [] if opdef is not None and opdef.grad is registry.NO_GRAD else [n for n in inputs if n in carries]
        carried_inputs.append(carried)
        if overwrites(op):
            carries.difference_update(outputs)
        if carried:
            carries.update(n for n in outputs if differentiable[n])

    needed = set(targets)   # vars whose current value's gradient reaches the targets
    wants = targets & leaves if leaves else set()   # a block that may not run passes their grads through
    on_path = []
    for idx in range(len(ops) - 1, -1, -1):
        op, inputs = ops[idx], carried_inputs[idx]
        outputs = [n for n in outputs_of[idx] if n in needed and differentiable[n]]
        if overwrites(op):
            needed.difference_update(outputs_of[idx])
        if inputs and outputs:
            if registry.sub_block(op) is not None and not registry.get(op.type).grad_op_of:   # only what its body uses
                inner = sub_block_path(block.program, op, set(outputs), set(inputs), no_grad, sub_paths)[0]
                inputs = [name for name in inputs if name in inner.wants_grad]
            if inputs:
                needed.update(inputs)
                wants.update(outputs)
                wants.update(inputs)
                on_path.append(idx)
    on_path.reverse()
    return OpPath(on_path, wants, no_grad, sub_paths)


def overwrites(op: OpDesc) -> bool:
    """Whether the op replaces the values of all its outputs (a control-flow op may not run its block)."""
    opdef = registry.get(op.type)
    return opdef is None or not (opdef.partial_write or opdef.sub_block_attr)


def sub_block_path(program, op: OpDesc, targets: set[str], leaves: set[str], no_grad: set[str],
                   sub_paths: dict) -> tuple[OpPath, set[str]]:
    """The path through a control-flow op's sub-block from ``leaves`` (outer vars it reads) to
    ``targets`` (vars it writes whose grads are not zero); returns it with the targets, which in a
    loop grow by the loop vars needed at the start of an iteration (so at the end of the previous one)."""
    key = (id(op), frozenset(targets), frozenset(leaves))   # computed once, here or by the backward of op
    if key not in sub_paths:
        body = program.blocks[registry.sub_block(op)]
        path = find_path(body, body.ops, targets, no_grad, leaves, sub_paths)
        outputs = set(op.output_names())
        while registry.get(op.type).loop_carried and (more := (path.wants_grad & outputs) - targets):
            targets = targets | more
            path = find_path(body, body.ops, targets, no_grad, leaves, sub_paths)
        sub_paths[key] = path, targets
    return sub_paths[key]


def check_makers(block: Block, path: OpPath) -> None:
    """Every op on the path has a grad maker; else one error listing all that lack one."""
    offenders = [(block.idx, i, block.ops[i].type) for i in path.op_indices
                 if registry.get(block.ops[i].type) is None or registry.get(block.ops[i].type).grad is None]
    if offenders:
        raise registry.missing_grad_error(offenders)
