"""PIR operands a legacy op takes as attributes. A constant (pd_op.full_int_array, pd_op.full, or a builtin.combine
of pd_op.full values) folds into the attribute's value; any other value becomes a tensor-valued attribute (wire
type VAR, or VARS for a combine) where the legacy op's definition lets the attribute be read from a var."""

from __future__ import annotations

import math
from collections.abc import Callable

from .. import opdef
from ..ir import VarDesc
from .graph import Op, TensorType, Value

CONSTANT_OPS = {"pd_op.full_int_array", "pd_op.full"}


def foldable(value: Value | None) -> bool:
    """Made by pd_op.full_int_array / pd_op.full, or a builtin.combine of pd_op.full values."""
    producer = value.op if value is not None else None
    if producer is None:
        return False
    if producer.name == "builtin.combine":
        return all(v is not None and v.op is not None and v.op.name == "pd_op.full" for v in producer.operands)
    return producer.name in CONSTANT_OPS


def tensor_attrs(legacy_type: str) -> frozenset[str]:
    """The attributes of the legacy op that a var may give (Paddle's support_tensor)."""
    definition = opdef.get(legacy_type)
    return definition.tensor_attrs if definition is not None else frozenset()


def folded(value: Value | None, fold: str, op: Op, operand: str, attr: str, fail: Callable):
    """The constant ``value`` (its origin past any stack) as the attribute's value, of the kind ``fold`` names."""
    producer = value.op if value is not None else None
    if not foldable(value):
        source = "a null value" if value is None else (producer.name if producer else "a block argument")
        raise fail(op, f"operand '{operand}' must be a constant (pd_op.full_int_array or pd_op.full): "
                       f"the legacy op takes it as attribute '{attr}', but it comes from {source}")
    raw = producer.attr("value") if producer.name in CONSTANT_OPS else [v.op.attr("value") for v in producer.operands]
    values = raw if isinstance(raw, list) else [raw]
    if not all(isinstance(v, (int, float)) for v in values):
        raise fail(producer, f"attribute 'value' must hold numbers, got {raw!r:.60}")
    if fold in ("ints", "int", "long") and not all(map(math.isfinite, values)):
        raise fail(op, f"operand '{operand}' must hold finite numbers for attribute '{attr}', not {values}")
    if fold == "ints":
        return [int(v) for v in values]
    if len(values) != 1:
        raise fail(op, f"operand '{operand}' must hold one number for attribute '{attr}', not {values}")
    if fold == "bool":
        return bool(values[0])
    return float(values[0]) if fold in ("float", "double", "value") else int(values[0])


def unstacked(ctx, value: Value, name: str, op: Op, operand: str) -> list[str]:
    """The elements of the 1-D tensor ``value`` (var ``name``) as vars of their own, by a legacy unstack: a computed
    operand the legacy op takes only as a list of scalars (set_value's StartsTensorList, from pd_op.stack)."""
    dims = value.type.dims if isinstance(value.type, TensorType) else None
    if dims is None or len(dims) != 1 or dims[0] < 0:
        raise ctx.fail(op, f"operand '{operand}' is a tensor of dims {dims}: the legacy op takes it as a list of "
                           f"scalars, so it must be 1-D of a known length")
    names = [ctx.namer.fresh("unstack") for _ in range(dims[0])]
    for element in names:
        ctx.block.add_var(VarDesc(element, [], value.type.dtype, stop_gradient=True))
    ctx.emit("unstack", {"X": [name]}, {"Y": names}, {"axis": 0, "num": dims[0]})
    return names
