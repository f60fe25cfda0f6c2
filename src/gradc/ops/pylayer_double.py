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
from . import pylayer  # noqa: F401  (registers the grad op given a maker here)
from .control_flow_double import Replay, differentiated_run
from .pylayer import inner_grad


def _pylayer_grad_grad(g) -> list:
    """d(pylayer_grad): the forward block and the user's backward block replayed, reading the output grads the
    grad op read, differentiated as a branch that always runs."""
    program = g.block.program
    backward = program.blocks[g.attr("backward_block")]
    if backward.forward_block_idx is None:
        raise GradError(f"pylayer_grad: its backward block {backward.idx} does not name its forward block "
                        f"(forward_block_idx), so gradc cannot replay the forward values it reads")
    forward = program.blocks[backward.forward_block_idx]
    replay = Replay(program.append_block(g.block.idx), forward, backward)
    renamed = replay.copy_ops(forward.ops + backward.ops, {inner_grad(grad): grad for grad in g.I("Out@GRAD")})
    outputs = []
    for var, grad in zip(g.I("Input"), g.O("Input@GRAD")):   # the grads again (zeros where the block left none)
        if grad != EMPTY_VAR:
            inner = renamed.get(var + GRAD_SUFFIX)
            replay.op("assign", {"X": [inner]}, {"Out": [grad]}) if inner else \
                replay.op("fill_any_like", {"X": [var]}, {"Out": [grad]}, {"value": 0.0, "dtype": -1})
            outputs.append(grad)
    return differentiated_run(g, replay.block, outputs)


# the replay reads the forward values afresh, not through the forward scope: Scope needs no gradient
defgrad("pylayer_grad", grad=_pylayer_grad_grad, no_grad_inputs=["Scope"], of="pylayer")
