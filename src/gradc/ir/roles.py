"""Paddle's op_role / op_role_var attributes, so tools that read them see a familiar program."""

from __future__ import annotations

from operator import itemgetter

from .descs import OpDesc
from .types import AttrType

FORWARD, BACKWARD, OPTIMIZE, LOSS = 0, 1, 2, 256
_INT, _STRINGS = AttrType.INT, AttrType.STRINGS


def has_role(op: OpDesc, role: int) -> bool:
    """Whether ``op``'s op_role carries every bit of ``role`` (BACKWARD, OPTIMIZE, ...)."""
    value = op.attrs.get("op_role")
    return isinstance(value, int) and value & role == role


def set_role(op: OpDesc, role: int) -> None:
    set_roles((op,), role)


def set_roles(ops, role: int) -> None:
    """The role of each op (one loop for a backward's thousands). An INT or STRINGS value is stored as given, so
    the attribute dicts are written directly: what set_attr does, without its call per attribute."""
    for op in ops:
        if op.var_attrs:   # an attribute named as a var: set_attr keeps the op's list of them right
            op.set_attr("op_role", role, _INT)
            if "op_role_var" not in op.attrs:
                op.set_attr("op_role_var", [], _STRINGS)
            continue
        attrs, types = op.attrs, op.attr_types
        attrs["op_role"], types["op_role"] = role, _INT
        if "op_role_var" not in attrs:  # Paddle carries it, empty, on every op
            attrs["op_role_var"], types["op_role_var"] = [], _STRINGS


def tag_param_grads(last_writer: dict[str, OpDesc], pairs: list[tuple[str, str]]) -> None:
    """op_role_var = [param, param@GRAD] on the op that finally writes each parameter's grad (``last_writer``: each
    name's last writer among the backward's ops)."""
    for param, grad in sorted(pairs, key=itemgetter(0)):   # a grad's name follows from its parameter's
        writer = last_writer.get(grad)
        if writer is None:
            continue
        value = [*(writer.attrs.get("op_role_var") or ()), param, grad]
        if writer.var_attrs:   # an attribute named as a var: set_attr keeps the op's list of them right
            writer.set_attr("op_role_var", value, _STRINGS)
        else:   # a STRINGS value is stored as given: set_attr's work without its calls per parameter
            writer.attrs["op_role_var"], writer.attr_types["op_role_var"] = value, _STRINGS
