"""The loss of a program paddle.static.amp's decorate wrote: it marks ``loss * loss_scaling`` as the loss (the
backward starts from the scaled loss, so float16 gradients do not underflow), but the loss a user watches is the one
it scaled, before O2's cast of a float16 loss to float32."""

from __future__ import annotations

from .ir import Block
from .pairing import BACKWARD, FORWARD, op_kinds

# the ops of dynamic (or static) loss scaling, and the slot each reads the scale from
SCALE_SLOTS = {"check_finite_and_unscale": "Scale", "update_loss_scaling": "PrevLossScaling"}


def loss_scaling_vars(block: Block) -> set[str]:
    """The vars loss scaling divides the gradients by, in any block (gradient merge's are in its conditional one)."""
    blocks = block.program.blocks if block.program is not None else [block]
    return {name for each in blocks for op in each.ops if op.type in SCALE_SLOTS
            for name in op.input(SCALE_SLOTS[op.type])}


def unscaled_loss(block: Block, name: str) -> str:
    """``name`` itself, unless a forward elementwise_mul writes it as its X times a loss-scaling var: then X, and
    through the casts that wrote X (an exact float16 -> float32 widening) the var they cast."""
    scales = loss_scaling_vars(block)
    if not scales:
        return name
    writers = {out: op for op, kind in zip(block.ops, op_kinds(block)) if kind == FORWARD
               for out in op.output_names()}
    op = writers.get(name)
    if op is None or op.type != "elementwise_mul" or not scales.intersection(op.input("Y")):
        return name
    name = op.input("X")[0]
    while (op := writers.get(name)) is not None and op.type == "cast":
        name = op.input("X")[0]
    return name


def screened_by_loss_scaling(block: Block, op_idx: int) -> bool:
    """Whether a NaN or Inf the op writes is one dynamic loss scaling screens: in a block whose gradients
    check_finite_and_unscale checks, the scaled loss's multiply, a backward op, or the check and update ops
    themselves (Paddle's unscale writes X * 0, NaN where X is Inf): the step is skipped and the scale shrinks."""
    scales = loss_scaling_vars(block)
    if not scales:
        return False
    op = block.ops[op_idx]
    if op.type in SCALE_SLOTS:
        return True
    if op.type == "elementwise_mul" and scales.intersection(op.input("Y")):
        return True
    return op_kinds(block)[op_idx] == BACKWARD
