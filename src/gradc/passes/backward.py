"""The backward pass as a Pass: appends the training ops of a loss."""

from __future__ import annotations

from collections.abc import Iterable

from ..backward import append_backward
from ..ir import EMPTY_VAR, Program, roles
from .base import Pass, register_pass


def _is_backward(op) -> bool:
    role = op.attrs.get("op_role")
    return isinstance(role, int) and role & roles.BACKWARD == roles.BACKWARD


@register_pass
class BackwardPass(Pass):
    name = "backward"

    def __init__(self, loss: str | None = None, parameter_list: Iterable[str] | None = None,
                 no_grad_set: Iterable[str] | None = None):
        self.loss = loss
        self.parameter_list = list(parameter_list) if parameter_list is not None else None
        self.no_grad_set = set(no_grad_set or ())

    def requires(self, program: Program) -> None:
        if any(_is_backward(op) for op in program.global_block.ops):
            raise self.fail("the program already has backward ops (op_role 1); compile the forward program")

    def apply(self, program: Program) -> list[tuple[str, str]]:
        return append_backward(program, self.loss, self.parameter_list, self.no_grad_set)

    def ensures(self, program: Program) -> None:
        """Every grad a backward op reads was written before it, or is a forward value."""
        block = program.global_block
        written = set()
        for idx, op in enumerate(block.ops):
            if _is_backward(op):
                for args in op.inputs.values():
                    for name in args:
                        if name not in written and "@GRAD" in name and name != EMPTY_VAR:
                            raise self.fail(f"block 0, op {idx} ({op.type}) reads '{name}' before any op writes it")
            for args in op.outputs.values():
                written.update(args)
