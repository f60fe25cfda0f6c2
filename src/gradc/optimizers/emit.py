"""Writing the ops of one minimize: into block 0 of the training program, with the op_role and op_role_var
Paddle gives them, every attribute of the op's definition, Paddle's var names; and the initialisers of the
persistable vars they need (learning rate, accumulators) into a startup program."""

from __future__ import annotations

from ..ir import AttrType, OpDesc, Program, roles
from ..registry import get, make_op

LR_SCHEDULE = 0x0010   # Paddle's OpRole.LRSched: ops that compute a learning rate carry OPTIMIZE | LR_SCHEDULE


class Emitter:
    def __init__(self, program: Program):
        self.program = program
        self.block = program.global_block
        self.startup = Program()
        self.init = self.startup.global_block
        self.role_var: list[str] = []     # the op_role_var of the ops appended now: [param, grad] pairs

    def fresh(self, pattern: str) -> str:
        return self.block.unused_name(pattern)

    def temporary(self, pattern: str, shape, dtype: int, stop_gradient: bool = False) -> str:
        name = self.fresh(pattern)
        self.block.create_var(name, list(shape), dtype, stop_gradient=stop_gradient)
        return name

    def persistable(self, name: str, shape, dtype: int, value: float, stop_gradient: bool = False) -> str:
        """A persistable var of the training program that the startup program fills with ``value``."""
        for block in (self.block, self.init):
            block.create_var(name, list(shape), dtype, persistable=True, stop_gradient=stop_gradient)
        fill = self.fill_constant(name, shape, dtype, value)
        roles.set_role(fill, roles.FORWARD)
        self.init.ops.append(fill)
        return name

    @staticmethod
    def fill_constant(out: str, shape, dtype: int, value: float) -> OpDesc:
        return complete(make_op("fill_constant", {}, {"Out": [out]},
                                {"shape": list(shape), "dtype": int(dtype), "value": float(value),
                                 "str_value": str(float(value))}))

    def op(self, type: str, inputs: dict, outputs: dict, attrs: dict | None = None,
           role: int = roles.OPTIMIZE, role_var: list[str] | None = None) -> OpDesc:
        """Append an op with every attribute its definition declares (``attrs`` over the defaults)."""
        return self.append(complete(make_op(type, inputs, outputs, attrs)), role, role_var)

    def append(self, op: OpDesc, role: int = roles.OPTIMIZE, role_var: list[str] | None = None) -> OpDesc:
        op.set_attr("op_role", role, AttrType.INT)
        op.set_attr("op_role_var", list(self.role_var if role_var is None else role_var), AttrType.STRINGS)
        self.block.ops.append(op)
        self.program.mark_changed()
        return op

    def scale(self, x: str, out: str, scale: float, role: int = roles.OPTIMIZE, role_var=None) -> OpDesc:
        return self.op("scale", {"X": [x]}, {"Out": [out]}, {"scale": float(scale), "bias": 0.0,
                                                              "bias_after_scale": True}, role, role_var)

    def like(self, pattern: str, source: str) -> str:
        """A temporary shaped and typed like the var ``source`` (a parameter or a gradient)."""
        var = self.block.var(source)
        return self.temporary(pattern, var.shape, var.dtype)


def complete(op: OpDesc) -> OpDesc:
    """Every attribute the op's definition declares, as Paddle writes them (given values over defaults)."""
    opdef = get(op.type)
    for name, default in opdef.attrs.items():
        if name not in op.attrs:
            op.set_attr(name, list(default) if isinstance(default, list) else default, opdef.attr_types[name])
    return op

