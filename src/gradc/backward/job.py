"""One block's backward job: what emit_grad_ops and the control-flow recursion hand each other,
by keyword, so no argument can be passed in the wrong position."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Block, OpDesc
from .names import GradNames
from .path import OpPath
from .versions import Versions


@dataclass(frozen=True, kw_only=True)
class BlockBackward:
    """The grad ops of ``forward_ops[path.op_indices]`` (the first ops of ``forward_block``) for
    ``block`` to hold, after the ``seeds`` that start them. The caller writes the ``given`` grads;
    the ``required`` ones are written by the end (zeros if nothing else writes them)."""

    block: Block
    forward_block: Block
    forward_ops: list[OpDesc]
    path: OpPath
    versions: Versions   # one per program: copies of overwritten forward values, in any block
    names: GradNames     # one per pass: the grad var of each var
    seeds: list[OpDesc] = field(default_factory=list)
    given: list[str] = field(default_factory=list)
    required: list[str] = field(default_factory=list)
