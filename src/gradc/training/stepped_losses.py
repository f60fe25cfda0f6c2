"""The losses of a training program of several minimize()s (DARTS's architecture and weights), each with the
parameters its optimizer steps: ``gradc check`` checks each parameter against its own loss."""

from __future__ import annotations

from ..ir import Block, Program
from ..pairing import (
    BACKWARD,
    OPTIMIZER,
    is_backward_seed,
    is_loss,
    loss_of_seed,
    marked_losses,
    op_kinds,
    seed_ops,
    seeded_losses,
)


def losses_stepped_apart(program: Program) -> list[tuple[str, list[str]]]:
    """Each loss a backward of its own starts from and the parameters the updates after that backward step; [] for
    one loss, or several differentiated as a sum."""
    block = program.global_block
    kinds = op_kinds(block)
    starts = _backward_starts(block, kinds)
    if len(starts) < 2 or starts[-1][1] - starts[0][1] == len(starts) - 1:
        return []
    stepped: dict[str, list[str]] = {loss: [] for loss, _ in starts}
    for idx, (op, kind) in enumerate(zip(block.ops, kinds)):
        if kind == OPTIMIZER and op.input("Param") and idx > starts[0][1]:
            loss = next(loss for loss, start in reversed(starts) if start < idx)
            stepped[loss] += [name for name in op.input("Param") if name not in stepped[loss]]
    return [(loss, sorted(params)) for loss, params in stepped.items() if params]


def _backward_starts(block: Block, kinds: list[str]) -> list[tuple[str, int]]:
    """(loss, its seed's index) in op order: the losses op_role marks and their seeds (not a gradients() seed, whose
    loss op stays a forward op), or, where no op_role marks one (a PIR program), each backward seed's scalar; [] where
    a loss is seeded twice (a gradients() inside a PIR program's step)."""
    marked = [name for names in marked_losses(block).values() for name in names]
    if marked:
        seeds = [idx for idx in seed_ops(block.ops, marked) if is_loss(block.ops[idx])]
        starts = [(loss, idx) for idx in seeds for name in block.ops[idx].output_names()
                  if (loss := loss_of_seed(name)) in marked]
    else:
        scalars = set(seeded_losses(block))
        starts = [(op.input("X")[0], idx) for idx, (op, kind) in enumerate(zip(block.ops, kinds))
                  if kind == BACKWARD and is_backward_seed(op) and op.input("X")[0] in scalars]
    return starts if len({loss for loss, _ in starts}) == len(starts) == len(marked or starts) else []
