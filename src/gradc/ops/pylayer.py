"""pylayer: paddle.static.nn.static_pylayer's op, a layer whose gradient the user writes.

Its attribute ``blocks`` names two blocks: [0] the forward block, which computes the outputs (Out) from the
inputs (Input) and may keep other values for the backward, and [1], when the user gave a backward_fn, the
user's backward block. The backward pass does not differentiate the forward block: the grad maker emits
`pylayer_grad`, which runs the backward block in the forward block's scope (Scope). Paddle's protocol fixes the
names that block uses: it reads the grad of output ``out`` as ``out@GRAD`` and leaves the grad of input ``x``
in ``x@GRAD``; pylayer_grad hands those to its slots Out@GRAD and Input@GRAD, position by position (zeros for
an input whose grad the block leaves unwritten). Without a backward block, the inputs must not want a gradient
(Paddle requires stop_gradient on them).
"""

from __future__ import annotations

import re

from ..errors import GradError
from ..ir import GRAD_SUFFIX, AttrType, Block, Program
from ..registry import defop, get, typed
from .infer import InferContext

FORWARD, BACKWARD = 0, 1   # positions in the attribute ``blocks``
_NUMBERED_GRAD = re.compile(r"@GRAD@\d+$")   # a later backward's name for a grad (gradc.backward.names)


def inner_grad(grad: str) -> str:
    """The name the user's backward block reads the output grad ``grad`` by: the first backward's name."""
    return _NUMBERED_GRAD.sub(GRAD_SUFFIX, grad)


def user_backward_blocks(program: Program) -> dict[int, set[str]]:
    """Each pylayer's backward block, with the output grads (``out@GRAD``) its pylayer_grad hands it: names it
    may read before any backward pass declares them. Its ``x@GRAD`` names are the protocol's, not grads a
    backward pass wrote (gradc.backward.names does not count them as taken)."""
    return {op.attrs["blocks"][BACKWARD]: {name + GRAD_SUFFIX for name in op.output("Out")}
            for block in program.blocks for op in block.ops
            if op.type == "pylayer" and len(op.attrs.get("blocks") or ()) > BACKWARD}


def _written(ctx: InferContext, forward: Block, name: str):
    """(shape, dtype) of ``name`` as the last op of ``forward`` that writes it gives it (its own inference, else
    the var it declares)."""
    for idx in range(len(forward.ops) - 1, -1, -1):
        op = forward.ops[idx]
        for slot, args in op.outputs.items():
            if name not in args:
                continue
            opdef = get(op.type)
            if opdef is not None and opdef.infer is not None and not op.var_attrs:
                try:
                    result = opdef.infer(InferContext(op, forward, idx)).get(slot)
                except Exception:  # noqa: BLE001 - the forward block's own checks report its ops' problems
                    result = None
                if result is not None:
                    return result[args.index(name)] if isinstance(result, list) else result
            var = forward.find_var(name)
            return (None if var is None or var.shape is None else list(var.shape)), getattr(var, "dtype", None)
    ctx.fail(f"its forward block {forward.idx} writes no value of output '{name}'")


def _blocks(ctx: InferContext) -> list[int]:
    blocks = ctx.attr("blocks")
    count = len(ctx.block.program.blocks)
    if not 1 <= len(blocks) <= 2:
        ctx.fail(f"attribute 'blocks' must name the forward block and, optionally, the backward block, not "
                 f"{len(blocks)} blocks")
    if not all(0 < idx < count for idx in blocks):
        ctx.fail(f"attribute 'blocks' names blocks {blocks}, but the program has {count} blocks")
    return blocks


def _infer_pylayer(ctx: InferContext) -> dict:
    forward = ctx.block.program.blocks[_blocks(ctx)[FORWARD]]
    return {"Out": [_written(ctx, forward, name) for name in ctx.op.output("Out")]}


def _infer_pylayer_grad(ctx: InferContext) -> dict:
    return {"Input@GRAD": [(ctx.shape("Input", i), ctx.dtype("Input", i)) for i in range(len(ctx.op.input("Input")))]}


def _pylayer_grad(g) -> list:
    """pylayer_grad(Input, Out@GRAD, Scope) -> Input@GRAD, running the user's backward block."""
    blocks = g.attr("blocks")
    if len(blocks) <= BACKWARD:
        wanted = [name for name in g.I("Input") if g.wants(name)]
        raise GradError(f"pylayer has no backward block (static_pylayer without a backward_fn, or a PIR program's, "
                        f"which keeps the backward_fn out of the program), but its inputs {wanted} want a "
                        f"gradient: give a backward_fn, or set stop_gradient on them")
    op = g.op("pylayer_grad", {"Input": g.I("Input"), "Out@GRAD": g.OG("Out"), "Scope": g.O("Scope")}, {})
    op.outputs["Input@GRAD"] = g.IG("Input")   # aligned with Input: @EMPTY@ where no grad is wanted
    op.set_attr("backward_block", blocks[BACKWARD], AttrType.BLOCK)
    return [op]


defop("pylayer", ["Input[]"], ["Out[]", "Scope"], attrs={"blocks": typed([], AttrType.BLOCKS)},
      no_grad_outputs=["Scope"], infer=_infer_pylayer, grad=_pylayer_grad)
defop("pylayer_grad", ["Input[]", "Out@GRAD[]", "Scope"], ["Input@GRAD[]?"],
      attrs={"backward_block": typed(0, AttrType.BLOCK)}, infer=_infer_pylayer_grad)
