"""Second derivatives through a pylayer: pylayer_grad's maker.

The user's backward block is program text like any other, so its result is differentiable: pylayer_grad's
gradient is the gradient of what that block computes, as a function of the output grads it reads and of the
forward values it reads (which depend on the inputs). As for conditional_block_grad (gradc.ops.control_flow_double),
the maker replays copies of the forward block's and the backward block's ops in a conditional_block that always
runs, writing the input grads the grad op wrote, and differentiates that with conditional_block's own maker.
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR, GRAD_SUFFIX
from ..registry import defgrad
from .control_flow_double import GRAD_REPLAYS, INLINED, Replay, differentiated_run
from .pylayer import BACKWARD, FORWARD, inner_grad  # (registers the grad op given a maker here)
from .replay_names import child_block


def _layer(program, backward):
    """The pylayer whose backward block is ``backward`` (None if no op names it)."""
    return next((op for block in program.blocks for op in block.ops if op.type == "pylayer"
                 and op.attrs["blocks"][BACKWARD:] == [backward.idx]), None)


def _forward_block(program, backward) -> int:
    """The forward block of the user's backward block: its pylayer's (a backward block need not name it)."""
    layer = _layer(program, backward)
    if layer is not None:
        return layer.attrs["blocks"][FORWARD]
    if backward.forward_block_idx is None:
        raise GradError(f"pylayer_grad: no pylayer names its backward block {backward.idx}, and the block does not "
                        f"name its forward block (forward_block_idx), so gradc cannot replay the forward values it "
                        f"reads")
    return backward.forward_block_idx


def _pylayer_grad_grad(g) -> list:
    """d(pylayer_grad): the forward block and the user's backward block replayed, reading the output grads the
    grad op read, differentiated as a branch that always runs."""
    program = g.block.program
    backward = program.blocks[g.attr("backward_block")]
    forward = program.blocks[_forward_block(program, backward)]
    replay = Replay(child_block(g.block), forward, backward)
    renamed = replay.copy_ops(forward.ops + backward.ops, {inner_grad(grad): grad for grad in g.I("Out@GRAD")})
    outputs = []
    for var, grad in zip(g.I("Input"), g.O("Input@GRAD")):   # the grads again (zeros where the block left none)
        if grad != EMPTY_VAR:
            inner = renamed.get(var + GRAD_SUFFIX)
            replay.op("assign", {"X": [inner]}, {"Out": [grad]}) if inner else replay.zeros_like(var, grad)
            outputs.append(grad)
    return differentiated_run(g, replay.block, outputs)


def _inline_pylayer(replay: Replay, op, reads: dict[str, str]) -> None:
    """A pylayer nested in a replayed block: its forward block's ops copied inline, their values kept for its
    grad op's replay."""
    forward = replay.block.program.blocks[op.attrs["blocks"][FORWARD]]
    inline = Replay(replay.block, forward, *replay.sources)
    replay.inlined[forward.idx] = inline.copy_ops(forward.ops, reads)
    reads.update({name: replay.inlined[forward.idx][name] for name in op.output("Out")})


def _nested_pylayer_grad(replay: Replay, grad_op, reads: dict[str, str]) -> None:
    """A pylayer's grad op nested in a replayed block: the user's backward block copied inline, reading the forward
    block's values the inline copy left and the output grads as ``out@GRAD`` (the pylayer's Out), and writing
    the inputs' grads (zeros where it leaves none), as pylayer_grad hands them over."""
    program = replay.block.program
    backward = program.blocks[grad_op.attr("backward_block")]
    layer = _layer(program, backward)
    values = None if layer is None else replay.inlined.get(layer.attrs["blocks"][FORWARD])
    if values is None:
        raise GradError(f"pylayer_grad: its pylayer (backward block {backward.idx}) is not replayed before it, so "
                        f"gradc cannot replay the forward values its backward block reads")
    given = {out + GRAD_SUFFIX: reads.get(grad, grad) for out, grad in zip(layer.output("Out"),
                                                                             grad_op.input("Out@GRAD"))}
    inline = Replay(replay.block, backward, *replay.sources)
    left = inline.copy_ops(backward.ops, {**reads, **values, **given})
    written = {name for op in backward.ops for name in op.output_names()}
    for var, read, grad in zip(layer.input("Input"), grad_op.input("Input"), grad_op.output("Input@GRAD")):
        if grad == EMPTY_VAR:
            continue
        if var + GRAD_SUFFIX in written:   # the protocol's name of the input's grad
            reads[grad] = left[var + GRAD_SUFFIX]
        else:
            reads[grad] = replay.fresh(grad)
            replay.zeros_like(reads.get(read, read), reads[grad])


GRAD_REPLAYS["pylayer_grad"] = _nested_pylayer_grad
INLINED["pylayer"] = _inline_pylayer
# the replay reads the forward values afresh, not through the forward scope: Scope needs no gradient
defgrad("pylayer_grad", grad=_pylayer_grad_grad, no_grad_inputs=["Scope"], of="pylayer")
