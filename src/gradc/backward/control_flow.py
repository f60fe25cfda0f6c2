"""The recursion of the backward pass into control flow (DESIGN section 5).

The grad maker of a control-flow op (conditional_block, while) asks for the backward of its
sub-block. We append a backward block (parent: the block that holds the grad op; forward_block_idx:
the sub-block) with the grad ops of the sub-block's ops on a path from the outer vars it reads that
want a gradient (the leaves) to the vars it writes whose gradient is not zero (the targets). The
grad op provides the targets' grads from outside; nested control flow recurses through the makers.

A loop body runs once per iteration (path.sub_block_path finds the loop vars it carries grads for).
Each target's grad is written by the end of a loop's backward block (zeros if the body overwrites
the var without reading it): the grad op carries it into the previous iteration. Likewise for a
branch's targets that are also its inputs, which the grad op hands back as their grads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import registry
from ..ir import OpDesc, roles
from .job import BlockBackward
from .path import check_complex, check_makers, sub_block_path
from .vars import declare_grad_vars


@dataclass
class BlockGrad:
    idx: int            # the backward block
    reads: list[str]    # grads of the op's outputs that the block reads (the grad op's Out@GRAD)
    grads: set[str]     # vars whose gradient the block computes
    passes: list[str]   # outputs that are not inputs but had a value before the op: if the body does
                        # not run (or runs zero times) their grad passes through, else it is zero;
                        # the grad op lists them as extra inputs


def backward_block(outer: BlockBackward, fwd: OpDesc, *, inputs: str, outputs: str,
                   has_grad: Callable[[str], bool],
                   emit: Callable[[BlockBackward], list[OpDesc]]) -> BlockGrad:
    """Append the backward block of ``fwd`` (an op of ``outer.forward_block``)'s sub-block, whose grad
    op goes into ``outer.block``. ``has_grad`` tells which outer grads ``outer`` has written so far."""
    parent, versions, names = outer.block, outer.versions, outer.names
    program = parent.program
    body = program.blocks[registry.sub_block(fwd)]
    leaves = {name for name in fwd.input(inputs) if name in outer.path.wants_grad}
    outs = fwd.output(outputs)
    path, targets = sub_block_path(program, fwd, {name for name in outs if has_grad(names(name))},
                                   leaves, outer.path.no_grad, outer.path.sub_paths)
    check_makers(body, path)
    check_complex(body, path)
    passes = [name for name in outs if name in targets and name not in fwd.input(inputs)
              and versions.has_value_before(outer.forward_block, fwd, name)]

    loop = registry.get(fwd.type).loop_carried is not None
    grad_block = program.append_block(parent.idx)
    grad_block.forward_block_idx = body.idx
    given = [names(name) for name in outs if name in targets]
    handed_back = [names(name) for name in outs
                   if name in targets and (loop or name in leaves or name in passes)]
    ops = emit(BlockBackward(block=grad_block, forward_block=body, forward_ops=body.ops, path=path,
                             versions=versions, names=names, given=given, required=handed_back))
    for op in ops:
        roles.set_role(op, roles.BACKWARD)
    grad_block.ops = ops
    declare_grad_vars(grad_block, ops)
    # a branch hands back the grad of a var it overwrites in place under the grad's own name, so it reads the one
    # given, also where no op of the block does (the new value cut off from the inputs): replaced, never summed
    return BlockGrad(grad_block.idx, _outer_reads(ops, given, set() if loop else set(handed_back)), path.wants_grad,
                     passes)


def _outer_reads(ops: list[OpDesc], given: list[str], listed: set[str]) -> list[str]:
    """The given grads that some op reads before the block itself writes them, and those ``listed``, in the order of
    the op's outputs (Paddle's Out@GRAD lines up with Out)."""
    reads, written = set(listed), set()
    for op in ops:
        reads.update(n for n in op.input_names() if n not in written)
        written.update(op.output_names())
    return [name for name in given if name in reads]
