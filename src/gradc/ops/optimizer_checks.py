"""What an optimizer op needs of its inputs and attributes: a learning rate holding one value, accumulators
shaped like their parameter, epsilons >= 0 and betas in [0, 1). Shape inference (``gradc compile``, the verify
pass) and the kernels (``gradc run`` / ``train``) ask the same questions, so a bad program fails with the same
one-line message naming the op and the var, whichever way it comes in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from ..opdef import OPS
from ..optable import FamilyTable
from ..shapes import dims_match, numel


@dataclass(frozen=True)
class UpdateRule:
    """The inputs and attributes of one optimizer op type, by role."""

    param: str = "Param"
    grad: str = "Grad"
    lr: str = "LearningRate"
    like_param: tuple[str, ...] = ()       # accumulators: one per parameter, shaped like it
    one_value: tuple[str, ...] = ()        # beta pows, tensor hyper-parameters: one element each
    nonnegative: tuple[str, ...] = ("epsilon",)
    betas: tuple[str, ...] = ()            # attributes in [0, 1)
    tensors: tuple[tuple[str, str], ...] = ()   # (input slot, attribute it overrides when fed)
    lr_like_param: bool = False            # rprop: the step sizes are a tensor per parameter
    choices: tuple[tuple[str, tuple], ...] = ()   # (attribute, the values Paddle knows), each item of a list
    needs: tuple[tuple[str, str], ...] = ()       # (attribute, input it needs when set): amsgrad, Moment2Max

    @cached_property
    def reads(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(input slots, attributes) the checks read: a kernel that saw them all unchanged need not check again."""
        slots = (self.param, self.grad, self.lr, *self.like_param, *self.one_value, *(s for s, _ in self.tensors),
                 *(s for _, s in self.needs))
        attrs = (*self.nonnegative, *self.betas, *(a for a, _ in self.choices), *(a for a, _ in self.needs))
        return tuple(dict.fromkeys(slots)), tuple(dict.fromkeys(attrs))


class OpView:
    """The names, shapes and values an op's checks read: from VarDescs (inference) or arrays (kernels)."""

    def __init__(self, names: Callable, shape: Callable, attr: Callable, value: Callable | None = None):
        self.names, self.shape, self.attr = names, shape, attr
        self.value = value or (lambda slot, i: None)   # a tensor's first value as a float, when known


def check_update(rule: UpdateRule, op: OpView, fail: Callable[[str], None]) -> None:
    """Call ``fail`` with the first problem found (it raises)."""
    params = op.names(rule.param)
    if not op.names(rule.lr):
        fail(f"input {rule.lr} is empty: an optimizer op needs its learning-rate var")
    for i, param in enumerate(params):
        param_shape = op.shape(rule.param, i)
        for slot in (rule.grad, *rule.like_param, *((rule.lr,) if rule.lr_like_param else ())):
            _check_like(op, slot, i, param, param_shape, fail)
    for slot in (*rule.one_value, *(() if rule.lr_like_param else (rule.lr,))):
        for i, name in enumerate(op.names(slot)):
            shape = op.shape(slot, i)
            if shape is not None and all(d >= 0 for d in shape) and numel(shape) != 1:
                fail(f"{slot} '{name}' has shape {shape}, but it must hold one value")
    for name in rule.nonnegative:
        value = _hyper_parameter(rule, op, name)
        if value is not None and value < 0:
            fail(f"{_source(rule, op, name)} is {value:.7g}, but it must be >= 0")
    for name in rule.betas:
        value = _hyper_parameter(rule, op, name)
        if value is not None and not 0 <= value < 1:
            fail(f"{_source(rule, op, name)} is {value:.7g}, but it must be in [0, 1)")
    for name, allowed in rule.choices:
        value = op.attr(name)
        for item in value if isinstance(value, list) else [value]:
            if item not in allowed:
                fail(f"attribute {name} is {item!r}; Paddle knows {', '.join(map(repr, allowed))}")
    for name, slot in rule.needs:
        if op.attr(name) and not op.names(slot):
            fail(f"attribute {name} is set, but input {slot} is empty")


def _check_like(op: OpView, slot: str, i: int, param: str, param_shape, fail) -> None:
    names = op.names(slot)
    if i >= len(names):
        return   # an optional accumulator (Moment2Max without amsgrad) or a list shorter than Param
    shape = op.shape(slot, i)
    if shape is not None and param_shape is not None and (
            len(shape) != len(param_shape) or not all(map(dims_match, shape, param_shape))):
        fail(f"{slot} '{names[i]}' has shape {shape}, but parameter '{param}' has shape {param_shape}")


def _hyper_parameter(rule: UpdateRule, op: OpView, name: str):
    """The value in force: the tensor that overrides the attribute when it is fed (a kernel knows it)."""
    slot = _overriding_slot(rule, op, name)
    return op.value(slot, 0) if slot is not None else op.attr(name)


def _source(rule: UpdateRule, op: OpView, name: str) -> str:
    slot = _overriding_slot(rule, op, name)
    return f"{slot} '{op.names(slot)[0]}'" if slot is not None else f"attribute {name}"


def _overriding_slot(rule: UpdateRule, op: OpView, name: str) -> str | None:
    return next((slot for slot, attr in rule.tensors if attr == name and op.names(slot)), None)


UPDATES: dict[str, UpdateRule] = FamilyTable(OPS)   # filled by the optimizer families


def update_rule(op_type: str, rule: UpdateRule) -> UpdateRule:
    UPDATES[op_type] = rule
    return rule
