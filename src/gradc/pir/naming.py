"""Readable, stable names for SSA values, Paddle-style: `<legacy type>_<k>.tmp_<i>` for the i-th output
of the k-th op of a type; parameters, data and fetch targets keep the names the file gives them."""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Program
from ..ir.roles import BACKWARD, LOSS
from .graph import Module, TensorType, Value, walk_ops

GRAD = "@GRAD"


class Namer:
    def __init__(self, reserved: set[str]):
        self.used = set(reserved)
        self.counters: dict[str, int] = {}

    def for_op(self, op_type: str) -> Callable[[], str]:
        """Names for the outputs of one op: `<type>_<k>.tmp_0`, `.tmp_1`, ..."""
        k = self.counters.get(op_type, 0)
        self.counters[op_type] = k + 1
        index = 0

        def next_name() -> str:
            nonlocal index
            name = self.unique(f"{op_type}_{k}.tmp_{index}")
            index += 1
            return name

        return next_name

    def fresh(self, op_type: str) -> str:
        return self.for_op(op_type)()

    def unique(self, name: str) -> str:
        """``name``, or ``name_1``, ``name_2``, ... if a file name already took it."""
        candidate, n = name, 0
        while candidate in self.used:
            n += 1
            candidate = f"{name}_{n}"
        self.used.add(candidate)
        return candidate


def file_names(module: Module) -> dict[Value, str]:
    """Names the file gives: parameters, data and feed inputs, and fetch targets."""
    names: dict[Value, str] = {}
    fetches = []
    for op in walk_ops(module.body):
        if op.name == "builtin.parameter" and op.results:
            names[op.results[0]] = op.attr("parameter_name")
        elif op.name in ("pd_op.data", "pd_op.feed") and op.results:
            names[op.results[0]] = op.attr("name")
        elif op.name == "pd_op.fetch" and op.operands and op.operands[0] is not None:
            fetches.append((op.operands[0], op.attr("name")))
    taken = set(names.values())
    for value, name in fetches:
        if value not in names and name not in taken and isinstance(value.type, TensorType):
            names[value] = name
            taken.add(name)
    return names


def training_names(program: Program) -> list[str]:
    """The loss and the gradients of the parameters and inputs of a training program's block 0: PIR names a value
    only as a fetch target, so the export fetches these to keep their names (and Paddle's executor returns them)."""
    block = program.global_block
    written = {name for op in block.ops for name in op.output_names()}
    losses = [name.removesuffix(GRAD) for op in block.ops if _is_seed(op) for name in op.output_names()
              if name.endswith(GRAD) and name.removesuffix(GRAD) in written]
    grads = [name + GRAD for name, var in block.vars.items()
             if (var.persistable or name not in written) and name + GRAD in written]
    return list(dict.fromkeys(losses + grads))


def _is_seed(op) -> bool:
    """The op that starts the backward with d loss / d loss = 1."""
    role = op.attrs.get("op_role")
    return isinstance(role, int) and role & (LOSS | BACKWARD) == LOSS | BACKWARD
