"""What a kernel sees of its op: inputs by slot, attributes with defaults, the scope it runs in."""

from __future__ import annotations

from ..errors import ExecutionError, op_location
from ..ir import EMPTY_VAR, Block, OpDesc
from .scope import MISSING


class KernelContext:
    __slots__ = ("op", "block", "op_idx", "attrs", "scope", "executor", "run_scope")

    def __init__(self, op: OpDesc, block: Block, op_idx: int, attrs: dict, executor):
        self.op = op
        self.block = block
        self.op_idx = op_idx
        self.attrs = attrs
        self.executor = executor
        self.scope = None       # set by the executor before each call
        self.run_scope = None   # the scope persistable vars are written to

    @property
    def where(self) -> str:
        return op_location(self.block.idx, self.op_idx, self.op.type)

    def has(self, slot: str) -> bool:
        return bool(self.op.inputs.get(slot))

    def x(self, slot: str, i: int = 0):
        """The i-th input array of a slot; None when the slot is empty or absent."""
        args = self.op.inputs.get(slot)
        if not args or i >= len(args):
            return None
        return self.read(args[i], slot)

    def xs(self, slot: str) -> list:
        return [self.read(name, slot) for name in self.op.inputs.get(slot, ())]

    def read(self, name: str, slot: str = "?"):
        value = self.scope.find(name, MISSING)
        if value is MISSING:
            raise ExecutionError(f"{self.where} reads var '{name}' (slot {slot}), which has no value: "
                                 f"it is not fed, not in the scope, and no earlier op wrote it")
        return value

    def attr(self, name: str):
        try:
            return self.attrs[name]
        except KeyError:
            raise ExecutionError(f"{self.where} has no attribute '{name}'") from None

    def wants(self, slot: str) -> bool:
        """Whether the op writes this output slot (grad kernels skip grads nobody asked for)."""
        return any(name != EMPTY_VAR for name in self.op.outputs.get(slot, ()))

    def out_names(self, slot: str) -> list[str]:
        return self.op.outputs.get(slot, [])

    def run_block(self, block_idx: int, scope) -> None:
        """Run a sub-block (control flow) in ``scope``."""
        self.executor.run_block(self.block.program.blocks[block_idx], scope, self.run_scope)

