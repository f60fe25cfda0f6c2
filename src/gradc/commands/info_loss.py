"""gradc info's loss line: the loss gradc compile would take (marked by op_role, seeded, or picked by itself) and
how it is found, or why there is none."""

from __future__ import annotations

from ..amp_loss import unscaled_loss
from ..ir import Program
from ..pairing import marked_losses, seed_ops, seeded_losses
from ..training.history import inner_objectives


def _unscaled(block, name: str, which: str, how: str) -> tuple[str, str]:
    """(the loss, how it is found): of ``name`` scaled by AMP's loss scaling, the loss before it."""
    loss = unscaled_loss(block, name)
    if loss != name:
        return loss, f"paddle.static.amp's loss scaling multiplies it into {name}, {which}"
    return name, how


def loss_found(program: Program) -> tuple[str | None, str]:
    """The loss gradc compile would take, if any, and how it is found (or why there is none)."""
    from ..backward import default_loss, loss_candidates, other_sinks, unread_scalars  # the compiler's, for this line
    block = program.global_block
    marked = [name for names in marked_losses(block).values() for name in names]
    if len(marked) > 1:   # compiled with several --loss: the first is the loss train reports first
        seeds = seed_ops(block.ops, marked)   # each loss's ones, written together by one backward
        how = ("the backward differentiates their sum" if seeds and seeds[-1] - seeds[0] == len(seeds) - 1 else
               "each starts its own backward (a minimize() each, over its own parameters)")
        return marked[0], f"op_role marks the losses {', '.join(marked)}; {how}"
    if marked:
        return _unscaled(block, marked[0], "which op_role marks the loss and the backward starts from",
                         "its op's op_role marks it the loss")
    seeded = seeded_losses(block)
    if seeded:   # MAML's support loss is seeded, but the loss is computed from its gradients
        inner = inner_objectives(block)
        seeded = [name for name in seeded if name not in inner]
    if seeded:   # of a PIR AMP program gradc compiled, the loss before its scaling
        return _unscaled(block, seeded[0], "which the backward starts from (a fill_any_like of ones reads it)",
                         "the backward starts from it: a fill_any_like of ones reads it, the seed of "
                         "paddle.static.gradients and of PIR programs; gradc train reports "
                         f"{'it' if len(seeded) == 1 else ', '.join(seeded)}")
    candidates = loss_candidates(program)
    picked = default_loss(program, notice=False)
    if len(candidates) == 1 and picked == candidates[0]:   # a PSNR written after the loss is picked so: name the others
        others = [] if block.ops[-1].type == "fetch" else other_sinks(program, candidates[0])
        doubt = f"; float scalars no op reads besides it: {', '.join(others)} (--loss NAME)" if others else ""
        return _unscaled(block, candidates[0], "the loss gradc would pick", "gradc compile picks it by itself" + doubt)
    if picked in candidates:
        return picked, ("gradc compile picks it by itself: of the float scalars the last op writes, the one summing "
                        "the others")
    if picked and candidates:
        return picked, (f"gradc compile picks it by itself: the one float scalar no op reads that parameters reach "
                        f"through ops with a gradient ({candidates[0]}, the last op's, is reached by none: a metric)")
    if picked:
        return picked, "gradc compile picks it by itself: the one float scalar no op reads"
    unread = unread_scalars(program)
    if unread:
        return None, f"not picked by itself; float scalars no op reads: {', '.join(unread)} (gradc compile --loss NAME)"
    return None, "none (no float scalar the program could minimise)"
