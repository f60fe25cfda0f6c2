"""What a kernel sees of its op: inputs by slot, attributes with defaults, the scope it runs in.

A kernel reads only the slots its op's definition declares: a misspelled slot is an error naming the
op and the slot, not a silent None. ``x`` reads a slot that must hold a var; ``optional`` one that may
be empty; ``grads`` computes only the gradients the op is asked for.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ExecutionError, op_location
from ..ir import EMPTY_VAR, Block, OpDesc
from .scope import MISSING


class KernelContext:
    __slots__ = ("op", "block", "op_idx", "attrs", "scope", "executor", "run_scope", "inputs", "outputs")

    def __init__(self, op: OpDesc, block: Block, op_idx: int, attrs, executor, opdef=None):
        self.op = op
        self.block = block
        self.op_idx = op_idx
        self.attrs = attrs
        self.executor = executor
        self.scope = None       # set by the executor before each call
        self.run_scope = None   # the scope persistable vars are written to
        # the declared slots; None for an op with a kernel but no definition (nothing to check against)
        self.inputs = frozenset(opdef.inputs) if opdef is not None else None
        self.outputs = frozenset(opdef.outputs) if opdef is not None else None

    @property
    def where(self) -> str:
        return op_location(self.block.idx, self.op_idx, self.op.type)

    def _declared(self, slot: str, declared) -> None:
        if declared is not None and slot not in declared:
            kind = "input" if declared is self.inputs else "output"
            raise ExecutionError(f"{self.where}: the kernel uses {kind} slot '{slot}', which op '{self.op.type}' "
                                 f"does not declare (declared: {', '.join(sorted(declared)) or 'none'})")

    def has(self, slot: str) -> bool:
        self._declared(slot, self.inputs)
        return bool(self.op.inputs.get(slot))

    def x(self, slot: str, i: int = 0):
        """The i-th input array of a slot that must hold one (see ``optional``)."""
        args = self.op.inputs.get(slot)
        if not args or i >= len(args):
            self._declared(slot, self.inputs)
            raise ExecutionError(f"{self.where}: input slot '{slot}' holds {len(args or ())} var(s); the kernel "
                                 f"needs var {i} of it")
        return self.read(args[i], slot)

    def optional(self, slot: str):
        """The first input array of an optional slot, or None when the slot is empty."""
        return self.x(slot) if self.has(slot) else None

    def xs(self, slot: str) -> list:
        self._declared(slot, self.inputs)
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
        self._declared(slot, self.outputs)
        return any(name != EMPTY_VAR for name in self.op.outputs.get(slot, ()))

    def grads(self, makers: dict[str, Callable[[], object]]) -> dict:
        """{slot: thunk} -> {slot: value} for the output slots the op writes; the others are not computed."""
        return {slot: make() for slot, make in makers.items() if self.wants(slot)}

    def out_names(self, slot: str) -> list[str]:
        self._declared(slot, self.outputs)
        return self.op.outputs.get(slot, [])

    def check_results(self, results: dict) -> None:
        """A kernel returns only declared output slots (checked on an op's first run)."""
        for slot in results:
            self._declared(slot, self.outputs)

    def run_block(self, block_idx: int, scope) -> None:
        """Run a sub-block (control flow) in ``scope``."""
        self.executor.run_block(self.block.program.blocks[block_idx], scope, self.run_scope)
