"""What a kernel sees of its op: inputs by slot, attributes with defaults, the scope it runs in.

A kernel reads only the slots its op's definition declares: a misspelled slot is an error naming the
op and the slot, not a silent None. ``x`` reads a slot that must hold a var; ``optional`` one that may
be empty; ``grads`` computes only the gradients the op is asked for.
"""

from __future__ import annotations

import weakref
from collections import ChainMap
from collections.abc import Callable

import numpy as np

from ..errors import ExecutionError, FeedError, op_location
from ..ir import EMPTY_VAR, AttrType, Block, OpDesc, VarType
from ..opdef import declared_type
from .feeding import program_inputs
from .lod import LoD, lod_of, set_lod
from .scope import MISSING
from .tensor_array import TensorArray


class KernelContext:
    __slots__ = ("op", "_block", "op_idx", "defaults", "scope", "executor", "run_scope", "inputs", "outputs", "ins",
                 "wanted", "checked", "bfloat16", "var_attrs", "state")

    def __init__(self, op: OpDesc, block: Block, op_idx: int, executor, opdef=None):
        self.op = op
        self._block = weakref.ref(block)   # the plan holding it lives on the block: no cycle to keep a program alive
        self.op_idx = op_idx
        self.defaults = opdef.attrs if opdef is not None else {}
        self.var_attrs = op.var_attrs   # tensor-valued attributes: read from their vars on every run
        self.executor = weakref.ref(executor)   # the plan holding it lives on the block: it must not keep the executor
        self.scope = None       # set by the executor before each call
        self.run_scope = None   # the scope persistable vars are written to
        # the declared slots; None for an op with a kernel but no definition (nothing to check against)
        self.inputs = frozenset(opdef.inputs) if opdef is not None else None
        self.outputs = frozenset(opdef.outputs) if opdef is not None else None
        # bound once per plan (the program's revision): the declared input slots the op fills, and the
        # declared output slots it writes (grad kernels skip the others)
        self.ins = {s: args for s, args in op.inputs.items() if self.inputs is None or s in self.inputs}
        self.wanted = frozenset(s for s, args in op.outputs.items() if (self.outputs is None or s in self.outputs)
                                and any(name != EMPTY_VAR for name in args))
        self.checked = None   # what the op's checks last passed on, for a kernel that checks on every run
        self.state = None     # a kernel's own across the runs of a plan (print counts the times it printed)
        # whether the op writes a var declared bfloat16: the few kernels Paddle runs in bfloat16 arithmetic then
        # round each step (gradc.bfloat16), the rest compute in float32 and the store rounds
        self.bfloat16 = any(var is not None and var.dtype == VarType.BF16
                            for var in map(block.find_var, op.output_names()))

    @property
    def block(self) -> Block:
        return self._block()

    @property
    def where(self) -> str:
        return op_location(self.block.idx, self.op_idx, self.op.type)

    def _declared(self, slot: str, declared) -> None:
        if declared is not None and slot not in declared:
            kind = "input" if declared is self.inputs else "output"
            raise ExecutionError(f"{self.where}: the kernel uses {kind} slot '{slot}', which op '{self.op.type}' "
                                 f"does not declare (declared: {', '.join(sorted(declared)) or 'none'})")

    def has(self, slot: str) -> bool:
        if self.ins.get(slot):
            return True
        self._declared(slot, self.inputs)
        return False

    def x(self, slot: str, i: int = 0):
        """The i-th input array of a slot that must hold one (see ``optional``)."""
        try:
            name = self.ins[slot][i]
        except (KeyError, IndexError):
            self._declared(slot, self.inputs)
            raise ExecutionError(f"{self.where}: input slot '{slot}' holds {len(self.ins.get(slot, ()))} var(s); "
                                 f"the kernel needs var {i} of it") from None
        scope = self.scope
        value = scope.vars.get(name, MISSING)   # most reads: a value of this very scope
        if value is MISSING and scope.parent is not None:   # or of the caller's (parameters)
            value = scope.parent.vars.get(name, MISSING)
        return self.read(name, slot) if value is MISSING else value

    def optional(self, slot: str):
        """The first input array of an optional slot, or None when the slot is empty."""
        if self.ins.get(slot):
            return self.x(slot)
        if self.inputs is not None and slot not in self.inputs:
            self._declared(slot, self.inputs)
        return None

    def xs(self, slot: str) -> list:
        self._declared(slot, self.inputs)
        return [self.read(name, slot) for name in self.ins.get(slot, ())]

    def read(self, name: str, slot: str = "?"):
        value = self.scope.find(name, MISSING)
        if value is MISSING and _declared_array(self.block, name):   # Paddle's scope holds a declared array from
            return TensorArray()   # the start: its length read before any write (in a branch) is 0
        if value is MISSING:
            raise self._missing(name, slot)
        return value

    def _missing(self, name: str, slot: str) -> ExecutionError:
        """Why a var has no value, and what gives it one: the feed, a params file or a startup program."""
        var = self.block.find_var(name)
        if var is not None and var.need_check_feed:
            inputs = ", ".join(program_inputs(self.block.program.global_block))
            return FeedError(f"{self.where} reads var '{name}' (slot {slot}), which is not fed (the program's "
                             f"inputs: {inputs})")
        if var is not None and var.persistable:
            return ExecutionError(f"{self.where} reads var '{name}' (slot {slot}), which has no value: a persistable "
                                  f"var (a parameter or optimizer state) the scope does not hold: load it "
                                  f"(gradc.load_params, --params) or run the startup program first in the same scope")
        return ExecutionError(f"{self.where} reads var '{name}' (slot {slot}), which has no value: it is not fed, "
                              f"not in the scope, and no earlier op wrote it")

    def lod(self, slot: str, i: int = 0) -> LoD | None:
        """The LoD of the i-th var of an input slot (gradc.executor.lod), or None when it has none."""
        self.x(slot, i)   # the slot and its value exist
        return lod_of(self.scope, self.ins[slot][i])

    def set_lod(self, slot: str, lod: LoD | None, i: int | None = None) -> None:
        """Give the vars of an output slot (or its i-th var) this LoD (None: none); kernels of op types in
        lod.SETS_LOD do."""
        for position, name in enumerate(self.out_names(slot)):
            if name != EMPTY_VAR and i in (None, position):
                set_lod(self.scope, name, lod, self.run_scope)

    @property
    def attrs(self) -> ChainMap:
        """The op's attributes over the definition's defaults."""
        return ChainMap(self.op.attrs, self.defaults)

    def attr(self, name: str):
        """Read live (an attribute set between runs shows in the next one), the default where the op has none."""
        value = self.op.attrs.get(name, MISSING)
        if value is MISSING:   # most reads find the op's own attribute
            value = self.defaults.get(name, MISSING)
            if value is MISSING:
                raise ExecutionError(f"{self.where} has no attribute '{name}'")
        elif self.var_attrs and name in self.var_attrs:
            return tensor_attr_value(self, name, value)
        return value

    def wants(self, slot: str) -> bool:
        """Whether the op writes this output slot (grad kernels skip grads nobody asked for)."""
        if slot in self.wanted:
            return True
        self._declared(slot, self.outputs)
        return False

    def grads(self, makers: dict[str, Callable[[], object]]) -> dict:
        """{slot: thunk} -> {slot: value} for the output slots the op writes; the others are not computed."""
        wanted, results = self.wanted, {}
        for slot, make in makers.items():
            if slot in wanted:
                results[slot] = make()
            elif self.outputs is not None and slot not in self.outputs:
                self._declared(slot, self.outputs)
        return results

    def out_names(self, slot: str) -> list[str]:
        self._declared(slot, self.outputs)
        return self.op.outputs.get(slot, [])

    def check_results(self, results: dict) -> None:
        """A kernel returns only declared output slots (checked on an op's first run)."""
        for slot in results:
            self._declared(slot, self.outputs)

    def run_block(self, block_idx: int, scope) -> None:
        """Run a sub-block (control flow) in ``scope``."""
        self.executor().run_block(self.block.program.blocks[block_idx], scope, self.run_scope)


_INTS = {AttrType.INT, AttrType.LONG, AttrType.INTS, AttrType.LONGS}
_FLOATS = {AttrType.FLOAT, AttrType.FLOAT64, AttrType.FLOATS, AttrType.FLOAT64S}
_BOOLS = {AttrType.BOOLEAN, AttrType.BOOLEANS}
_ONE_VALUE = {AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.FLOAT64, AttrType.BOOLEAN, AttrType.SCALAR}


def tensor_attr_value(ctx: KernelContext, name: str, names):
    """A tensor-valued attribute (wire type VAR: one var; VARS: a var per element) as the value of the type the
    op declares: what its var(s) hold when the op runs."""
    arrays = [ctx.read(var, f"attribute {name}") for var in ([names] if isinstance(names, str) else names)]
    values = [value for array in arrays for value in np.ravel(array).tolist()]
    declared = declared_type(ctx.op.type, name)
    convert = int if declared in _INTS else float if declared in _FLOATS else bool if declared in _BOOLS else None
    values = values if convert is None else [convert(value) for value in values]
    if declared not in _ONE_VALUE:
        return values
    if len(values) != 1:
        raise ExecutionError(f"{ctx.where}: attribute '{name}' takes one value, but its var(s) {names} hold "
                             f"{len(values)}")
    return values[0]


def _declared_array(block: Block, name: str) -> bool:
    var = block.find_var(name)
    return var is not None and var.type == VarType.DENSE_TENSOR_ARRAY
