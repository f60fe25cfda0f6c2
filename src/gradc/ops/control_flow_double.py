"""Second derivatives through control flow: makers for conditional_block_grad and while_grad.

A control-flow grad op runs its backward block in the scopes its forward op left: it reads the forward
block's values there, not through its inputs, so no maker can see how they move with the inputs. Its maker
recomputes instead: it builds a forward op of the same kind whose block replays copies of the forward
block's and the backward block's ops, writing the grads the grad op wrote, and differentiates that op with
the control-flow op's own maker. Every var the copies write is renamed (``v@REPLAY@{block}``), so the
replay never touches the values of the run it repeats; the grads are written again with the same values.
"""

from __future__ import annotations

import re

from ..errors import GradError
from ..ir import EMPTY_VAR, AttrType, Block, OpDesc, VarType
from ..registry import defgrad, get
from . import control_flow  # noqa: F401  (registers the grad ops given makers here)

_RENAMED = re.compile(r"@RENAME@block\d+@\d+$")


def replay(g, blocks: list[Block], suffix: str = "") -> tuple[Block, dict[str, str]]:
    """A new block (child of the grad ops' block) running copies of the ops of ``blocks``, one after another;
    returns it and the name each written var has there."""
    program = g.block.program
    block = program.append_block(g.block.idx)
    renamed: dict[str, str] = {}
    for source in blocks:
        for op in source.ops:
            if any(True for _ in op.block_refs()):
                raise GradError(f"{g.fwd.type}: gradc does not differentiate twice through nested control flow "
                                f"(op {op.type} in block {source.idx})")
            copy = op.copy()
            copy.inputs = {slot: [renamed.get(n, n) for n in args] for slot, args in op.inputs.items()}
            for args in copy.outputs.values():
                for pos, name in enumerate(args):
                    if name != EMPTY_VAR:
                        if name not in renamed:
                            renamed[name] = f"{name}@REPLAY@{block.idx}{suffix}"
                            block.add_var(source.visible_var(name).copy(renamed[name]))
                        args[pos] = renamed[name]
            block.ops.append(copy)
    return block, renamed


def outer_reads(block: Block) -> list[str]:
    """The vars the block's ops read before any of them writes them: what it takes from outside."""
    written, reads = set(), []
    for op in block.ops:
        reads += [n for n in op.input_names() if n not in written and n not in reads and n != EMPTY_VAR]
        written.update(op.output_names())
    return reads


def _grads_again(g, block: Block, renamed: dict[str, str], inputs: list[str], grads: list[str]) -> list[str]:
    """Append to ``block`` ops writing each grad the grad op wrote (``grads``, aligned with ``inputs``) from
    its replayed value (zeros where the backward block wrote none); returns the grads written."""
    written = []
    for var, grad in zip(inputs, grads):
        if grad == EMPTY_VAR:
            continue
        inner = renamed.get(_RENAMED.sub("", grad))
        block.ops.append(OpDesc("assign", {"X": [inner]}, {"Out": [grad]}) if inner else
                         OpDesc("fill_any_like", {"X": [var]}, {"Out": [grad]}, {"value": 0.0, "dtype": -1}))
        written.append(grad)
    return written


def _scope_var(block: Block, name: str) -> str:
    var = block.create_var(name, None, None)
    var.type = VarType.STEP_SCOPES
    return name


def _conditional_block_grad(g) -> list[OpDesc]:
    """d(conditional_block_grad): the branch's forward and backward blocks replayed in one conditional_block
    with the same condition, differentiated as a branch."""
    program = g.block.program
    backward = program.blocks[g.attr("sub_block")]
    body, renamed = replay(g, [program.blocks[backward.forward_block_idx], backward])
    outs = _grads_again(g, body, renamed, g.I("Input"), g.O("Input@GRAD"))
    branch = OpDesc("conditional_block", {"Cond": g.I("Cond"), "Input": outer_reads(body)},
                    {"Out": outs, "Scope": [_scope_var(g.block, f"scope@REPLAY@{body.idx}")]},
                    {"is_scalar_condition": g.attr("is_scalar_condition")})
    branch.set_attr("sub_block", body.idx, AttrType.BLOCK)
    return [branch, *get("conditional_block").grad(g.for_op(branch))]


# a grad op: the backward pass sees it through its inputs and outputs, not the names its block uses; the
# replay recomputes the branch's outputs (Out), so their values need no gradient
defgrad("conditional_block_grad", grad=_conditional_block_grad, no_grad_inputs=["Cond", "Out", "Scope"]).grad_op_of = \
    "conditional_block"
