"""Which ops to differentiate: those on a path from a differentiable var to the loss.

Two linear sweeps over the block: backward from the loss (what the loss depends on) and
forward from the differentiable leaves (what depends on something that wants a gradient).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import registry
from ..ir import FLOAT_DTYPES, AttrType, Block, OpDesc


@dataclass
class OpPath:
    op_indices: list[int]   # forward ops to differentiate, in program order
    wants_grad: set[str]    # vars whose gradient is computed
    no_grad: set[str] = field(default_factory=set)   # the user's no-grad set, for sub-blocks

    def __contains__(self, name: str) -> bool:
        return name in self.wants_grad


def is_differentiable_var(block: Block, name: str, no_grad: set[str]) -> bool:
    var = block.find_var(name)
    return (var is not None and name not in no_grad and not var.stop_gradient
            and var.dtype in FLOAT_DTYPES)


def differentiable_inputs(op: OpDesc) -> list[str]:
    opdef = registry.get(op.type)
    skip = opdef.no_grad_inputs if opdef is not None else frozenset()
    return [n for slot, args in op.inputs.items() if slot not in skip for n in args]


def find_path(block: Block, ops: list[OpDesc], targets: set[str], no_grad: set[str],
              leaves: set[str] | None = None) -> OpPath:
    """Ops among ``ops`` (the block's ops up to the loss) on a path from a leaf to ``targets``.
    Leaves are the differentiable vars read before any op writes them, unless given (a sub-block:
    the outer vars that want a gradient). A name an op overwrites starts a new value: it depends on
    a leaf only if that op carries one."""
    carries = set(leaves or ())   # vars whose current value depends on a differentiable leaf
    written: set[str] = set()
    carried_inputs = []           # per op: its differentiable inputs that carry when it runs
    for op in ops:
        inputs = differentiable_inputs(op)
        if leaves is None:
            carries.update(n for n in inputs if n not in written and is_differentiable_var(block, n, no_grad))
            written.update(op.output_names())
        opdef = registry.get(op.type)
        carried = [] if opdef is not None and opdef.grad is registry.NO_GRAD else [n for n in inputs if n in carries]
        carried_inputs.append(carried)
        if overwrites(op):
            carries.difference_update(op.output_names())
        if carried:
            carries.update(n for n in op.output_names() if is_differentiable_var(block, n, no_grad))

    needed = set(targets)   # vars whose current value's gradient reaches the targets
    wants = targets & leaves if leaves else set()   # a block that may not run passes their grads through
    on_path = []
    for idx in range(len(ops) - 1, -1, -1):
        op, inputs = ops[idx], carried_inputs[idx]
        outputs = [n for n in op.output_names() if n in needed and is_differentiable_var(block, n, no_grad)]
        if overwrites(op):
            needed.difference_update(op.output_names())
        if inputs and outputs:
            if op.attr_types.get("sub_block") == AttrType.BLOCK:   # only what its body really uses
                inner = sub_block_path(block.program, op, set(outputs), set(inputs), no_grad)[0]
                inputs = [name for name in inputs if name in inner.wants_grad]
            if inputs:
                needed.update(inputs)
                wants.update(outputs)
                wants.update(inputs)
                on_path.append(idx)
    on_path.reverse()
    return OpPath(on_path, wants, no_grad)


PARTIAL_WRITERS = frozenset({"select_output"})   # writes one of its outputs, the others keep their values


def overwrites(op: OpDesc) -> bool:
    """Whether the op replaces the values of all its outputs (a control-flow op may not run its block)."""
    return op.type not in PARTIAL_WRITERS and op.attr_types.get("sub_block") != AttrType.BLOCK


LOOP_OPS = frozenset({"while"})   # control-flow ops whose sub-block runs once per iteration


def sub_block_path(program, op: OpDesc, targets: set[str], leaves: set[str],
                   no_grad: set[str]) -> tuple[OpPath, set[str]]:
    """The path through a control-flow op's sub-block from ``leaves`` (outer vars it reads) to
    ``targets`` (vars it writes whose grads are not zero); returns it with the targets, which in a
    loop grow by the loop vars needed at the start of an iteration (so at the end of the previous one)."""
    body = program.blocks[op.attr("sub_block")]
    path = find_path(body, body.ops, targets, no_grad, leaves)
    outputs = set(op.output_names())
    while op.type in LOOP_OPS and (more := (path.wants_grad & outputs) - targets):
        targets = targets | more
        path = find_path(body, body.ops, targets, no_grad, leaves)
    return path, targets


def check_makers(block: Block, path: OpPath) -> None:
    """Every op on the path has a grad maker; else one error listing all that lack one."""
    offenders = [(block.idx, i, block.ops[i].type) for i in path.op_indices
                 if registry.get(block.ops[i].type) is None or registry.get(block.ops[i].type).grad is None]
    if offenders:
        raise registry.missing_grad_error(offenders)
