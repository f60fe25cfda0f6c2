"""The backward pass as a Pass: appends the training ops of a loss, or of the sum of several."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..backward import append_backward, default_loss
from ..ir import EMPTY_VAR, Program, roles
from ..pairing import is_loss, seed_ops
from .base import Pass, register_pass


def refuses_again(program: Program, losses: str | Sequence[str] | None) -> str | None:
    """Why a program that has backward ops cannot be differentiated for ``losses`` (one name, several, or None:
    the one gradc picks; None: it can): only a loss written after its last backward op (a gradient penalty, a
    Hessian-vector product) is differentiated again; a loss with backward ops after it has been differentiated
    already, and would be compiled twice, unless the program goes on after them and none starts from it (GradNorm's
    task losses, each before the gradients of its weighted copy). A training program takes a second optimizer as
    Paddle's second minimize() appends one: of a forward loss no backward starts from (DARTS's two levels)."""
    ops = program.global_block.ops
    # the ops' roles read once, roles.has_role inlined (a forward program: every op, without a call each)
    backward = [isinstance(role, int) and role & roles.BACKWARD == roles.BACKWARD
                for role in [op.attrs.get("op_role") for op in ops]]
    if not any(backward):
        return None
    last = len(backward) - 1 - backward[::-1].index(True)
    names = [losses] if losses is None or isinstance(losses, str) else list(losses) or [None]
    names = [name or default_loss(program, notice=False) for name in names]
    writers = [max((idx for idx, op in enumerate(ops) if name in op.output_names()), default=-1) for name in names]
    if any(roles.has_role(op, roles.OPTIMIZE) for op in ops):
        first = min(idx for idx, op in enumerate(ops) if roles.has_role(op, roles.BACKWARD))
        if all(names) and max(writers) < first and not _minimized(ops, names):
            return None   # a second minimize(): a forward loss none differentiated, over its own parameters
        return _REFUSAL + _SECOND_MINIMIZE
    if min(writers) > last or (all(names) and _goes_on_after(ops, last) and not _minimized(ops, names)):
        return None
    return _REFUSAL


def _minimized(ops, names: list[str]) -> list[str]:
    """The losses a minimize() (or append_backward) differentiated: seeded, and their op marked the loss; a seed of
    gradients() leaves its loss's op a forward op (the inner loss of DARTS's virtual step, of MAML), whose loss may
    still be trained."""
    seeded = [name for name in names if seed_ops(ops, [name])]
    return [name for name in seeded if any(is_loss(op) and name in op.output_names() for op in ops)]


def _goes_on_after(ops, last: int) -> bool:
    """Forward ops follow the last backward op: the backward is inner (GradNorm's gradient norms, a gradient
    penalty), part of a forward program, whose losses written before it may be differentiated too."""
    return any(not roles.has_role(op, roles.BACKWARD) for op in ops[last + 1:])


_REFUSAL = ("the program already has backward ops (op_role 1); compile the forward program, or, to differentiate "
            "through its backward (a gradient penalty, a Hessian-vector product), name a loss computed after it "
            "(--loss)")
_SECOND_MINIMIZE = ("; a second optimizer, as a second minimize() (DARTS's architecture and weights), takes a loss "
                    "of the forward part that no minimize() has differentiated (--loss; --param for its parameters)")


@register_pass
class BackwardPass(Pass):
    """The backward of one loss, or of the sum of several (a multi-task model's heads) in one backward."""
    name = "backward"

    def __init__(self, loss: str | Sequence[str] | None = None, parameter_list: Iterable[str] | None = None,
                 no_grad_set: Iterable[str] | None = None):
        self.losses = [] if loss is None else [loss] if isinstance(loss, str) else list(loss)   # []: gradc picks
        self.parameter_list = list(parameter_list) if parameter_list is not None else None
        self.no_grad_set = set(no_grad_set or ())
        self.losses_used: list[str] = []   # the losses given, or the one apply picked (gradc compile --json names them)
        self.pairs: list[tuple[str, str]] | None = None   # (parameter, gradient) once applied: the optimizer's

    @property
    def loss_used(self) -> str | None:
        """The one loss differentiated (None: several, or none picked)."""
        return self.losses_used[0] if len(self.losses_used) == 1 else None

    def requires(self, program: Program) -> None:
        refusal = refuses_again(program, self.losses)
        if refusal:
            raise self.fail(refusal)

    def apply(self, program: Program) -> list[tuple[str, str]]:
        picked = [name or default_loss(program) for name in self.losses or [None]]   # None: the error says why
        self.losses_used = [name for name in picked if name is not None]
        several = len(picked) > 1   # each a float var of any shape, seeded with ones, as gradients() takes targets
        self.pairs = append_backward(program, picked if several else picked[0], self.parameter_list,
                                     self.no_grad_set, any_shape=several)
        return self.pairs

    def ensures(self, program: Program) -> None:
        """Every grad a backward op reads was written before it, or is a forward value."""
        block = program.global_block
        written = set()
        backward = roles.BACKWARD
        for idx, op in enumerate(block.ops):
            role = op.attrs.get("op_role")   # roles.has_role inlined: no call per op of the whole program
            if isinstance(role, int) and role & backward == backward:
                for args in op.inputs.values():
                    for name in args:
                        # the name's own text first: a forward value (half the reads) takes no probe of the set
                        if "@GRAD" in name and name not in written and name != EMPTY_VAR:
                            raise self.fail(f"block 0, op {idx} ({op.type}) reads '{name}' before any op writes it")
                for args in op.outputs.values():
                    written.update(args)
            else:   # only grads are looked up: a forward value stays out of the set, half as large in a big program
                for args in op.outputs.values():
                    for name in args:
                        if "@GRAD" in name:
                            written.add(name)
