"""Declares the variables the backward ops write, shaped and typed like the forward var."""

from __future__ import annotations

from ..ir import EMPTY_VAR, GRAD_SUFFIX, Block, OpDesc


def forward_name(grad: str) -> str:
    """x@GRAD@RENAME@block0@1 -> x; x@GRAD -> x."""
    return grad.split(GRAD_SUFFIX, 1)[0]


def declare_grad_vars(block: Block, ops: list[OpDesc]) -> list[str]:
    """Declare every var the ops write that is not declared yet; returns the new names."""
    created = []
    for op in ops:
        for name in op.output_names():
            if name == EMPTY_VAR or block.find_var(name) is not None:
                continue
            source = block.find_var(forward_name(name))
            if source is None:
                continue
            var = block.add_var(source.copy(name))
            var.persistable = False
            var.is_parameter = None
            var.need_check_feed = None
            var.stop_gradient = False
            created.append(name)
    return created
