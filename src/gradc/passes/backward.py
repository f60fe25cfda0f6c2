"""The backward pass as a Pass: appends the training ops of a loss."""

from __future__ import annotations

from collections.abc import Iterable

from ..backward import append_backward, default_loss
from ..ir import EMPTY_VAR, Program, roles
from .base import Pass, register_pass


def refuses_again(program: Program, loss: str | None) -> str | None:
    """Why a program that has backward ops cannot be differentiated for ``loss`` (None: it can): only a loss
    written after its last backward op (a gradient penalty, a Hessian-vector product) is differentiated again; a
    loss with backward ops after it has been differentiated already, and would be compiled twice."""
    ops = program.global_block.ops
    last = max((idx for idx, op in enumerate(ops) if roles.has_role(op, roles.BACKWARD)), default=None)
    if last is None:
        return None
    loss = loss or default_loss(program, notice=False)
    writer = max((idx for idx, op in enumerate(ops) if loss in op.output_names()), default=-1)
    if writer > last and not any(roles.has_role(op, roles.OPTIMIZE) for op in ops):
        return None
    return ("the program already has backward ops (op_role 1); compile the forward program, or, to differentiate "
            "through its backward (a gradient penalty, a Hessian-vector product), name a loss computed after it "
            "(--loss)")


@register_pass
class BackwardPass(Pass):
    name = "backward"

    def __init__(self, loss: str | None = None, parameter_list: Iterable[str] | None = None,
                 no_grad_set: Iterable[str] | None = None):
        self.loss = loss
        self.parameter_list = list(parameter_list) if parameter_list is not None else None
        self.no_grad_set = set(no_grad_set or ())
        self.loss_used: str | None = None   # the loss given, or the one apply picked

    def requires(self, program: Program) -> None:
        refusal = refuses_again(program, self.loss)
        if refusal:
            raise self.fail(refusal)

    def apply(self, program: Program) -> list[tuple[str, str]]:
        self.loss_used = self.loss or default_loss(program)   # gradc compile --json names it (None: the error says why)
        return append_backward(program, self.loss_used, self.parameter_list, self.no_grad_set)

    def ensures(self, program: Program) -> None:
        """Every grad a backward op reads was written before it, or is a forward value."""
        block = program.global_block
        written = set()
        for idx, op in enumerate(block.ops):
            if roles.has_role(op, roles.BACKWARD):
                for args in op.inputs.values():
                    for name in args:
                        if name not in written and "@GRAD" in name and name != EMPTY_VAR:
                            raise self.fail(f"block 0, op {idx} ({op.type}) reads '{name}' before any op writes it")
            for args in op.outputs.values():
                written.update(args)
