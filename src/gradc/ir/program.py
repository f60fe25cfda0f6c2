"""The in-memory program: plain Python objects, converted to and from protobuf only in gradc.io.

Optional wire fields that may be absent are kept as ``None`` so a load/save round trip
reproduces exactly what the file said (proto2 distinguishes "unset" from "set to default").
"""

from __future__ import annotations

from collections.abc import Iterable

from ..gcpause import gc_paused
from .types import AttrType, VarType, dtype_name

GRAD_SUFFIX = "@GRAD"
EMPTY_VAR = "@EMPTY@"
_BLOCK_KINDS = frozenset({AttrType.BLOCK, AttrType.BLOCKS})


def grad_name(var: str) -> str:
    return var + GRAD_SUFFIX


def _enum_name(enum, value) -> str:
    try:
        return enum(value).name
    except ValueError:
        return str(value)


class VarDesc:
    __slots__ = (
        "name", "type", "dtype", "shape", "lod_level",
        "persistable", "need_check_feed", "is_parameter", "stop_gradient",
        "attrs", "raw_type",
    )

    def __init__(self, name: str, shape: Iterable[int] | None = None, dtype: int | None = VarType.FP32,
                 type: int = VarType.DENSE_TENSOR, *, persistable: bool | None = None,
                 is_parameter: bool | None = None, stop_gradient: bool | None = None,
                 need_check_feed: bool | None = None, lod_level: int | None = None):
        self.name = name
        self.type = type
        self.dtype = dtype            # element type of a tensor-like var, else None
        self.shape = list(shape) if shape is not None else None
        self.lod_level = lod_level
        self.persistable = persistable
        self.need_check_feed = need_check_feed
        self.is_parameter = is_parameter
        self.stop_gradient = stop_gradient
        self.attrs: list[bytes] = []  # VarDesc.Attr messages, carried through untouched
        self.raw_type: bytes | None = None  # a VarType we do not model (reader, tuple, ...), kept verbatim

    def copy(self, name: str | None = None) -> VarDesc:
        new = VarDesc.__new__(VarDesc)
        new.name = self.name if name is None else name
        new.type, new.dtype, new.lod_level, new.raw_type = self.type, self.dtype, self.lod_level, self.raw_type
        new.shape = list(self.shape) if self.shape is not None else None
        new.persistable, new.need_check_feed = self.persistable, self.need_check_feed
        new.is_parameter, new.stop_gradient = self.is_parameter, self.stop_gradient
        new.attrs = list(self.attrs)
        return new

    def __repr__(self) -> str:
        kind = "" if self.type == VarType.DENSE_TENSOR else f", type={_enum_name(VarType, self.type)}"
        return f"VarDesc({self.name!r}, shape={self.shape}, dtype={dtype_name(self.dtype)}{kind})"


class OpDesc:
    __slots__ = ("type", "inputs", "outputs", "attrs", "attr_types", "is_target", "repeated_attrs")

    def __init__(self, type: str, inputs: dict[str, list[str]] | None = None,
                 outputs: dict[str, list[str]] | None = None, attrs: dict | None = None,
                 attr_types: dict[str, int] | None = None):
        self.type = type
        self.inputs: dict[str, list[str]] = {k: list(v) for k, v in (inputs or {}).items()}
        self.outputs: dict[str, list[str]] = {k: list(v) for k, v in (outputs or {}).items()}
        self.attrs: dict[str, object] = {}
        self.attr_types: dict[str, int] = {}
        self.is_target: bool | None = None
        # Paddle writes some attrs twice (reshape2's mkldnn_data_type): (wire position, Attr bytes)
        self.repeated_attrs: list[tuple[int, bytes]] = []
        for name, value in (attrs or {}).items():
            self.set_attr(name, value, (attr_types or {}).get(name))

    def input(self, slot: str) -> list[str]:
        return self.inputs.get(slot, [])

    def output(self, slot: str) -> list[str]:
        return self.outputs.get(slot, [])

    def input_names(self) -> list[str]:
        names: list[str] = []   # a list, not a generator: the passes call these on every op, often
        for args in self.inputs.values():
            names += args
        return names

    def output_names(self) -> list[str]:
        names: list[str] = []
        for args in self.outputs.values():
            names += args
        return names

    def attr(self, name: str, default=None):
        return self.attrs.get(name, default)

    def block_refs(self) -> list[tuple[str, int]]:
        """(attribute, block index) of every block the op's attributes name (wire types BLOCK, BLOCKS)."""
        kinds = self.attr_types
        if _BLOCK_KINDS.isdisjoint(kinds.values()):   # most ops: a set test, no walk over the attributes
            return []
        refs = []
        for name, value in self.attrs.items():
            kind = kinds.get(name)
            if kind == AttrType.BLOCK and value is not None:
                refs.append((name, value))
            elif kind == AttrType.BLOCKS:
                refs += [(name, idx) for idx in value]
        return refs

    def set_attr(self, name: str, value, type: int | None = None) -> None:
        """Set an attribute; its wire type is kept, given, or inferred from the Python value."""
        if type is None:
            type = self.attr_types.get(name)
        if type is None:
            type = infer_attr_type(value)
        self.attrs[name] = value
        self.attr_types[name] = type

    def copy(self) -> OpDesc:
        new = OpDesc.__new__(OpDesc)
        new.type = self.type
        new.inputs = {k: list(v) for k, v in self.inputs.items()}
        new.outputs = {k: list(v) for k, v in self.outputs.items()}
        new.attrs = {k: list(v) if isinstance(v, list) else v for k, v in self.attrs.items()}
        new.attr_types = dict(self.attr_types)
        new.is_target = self.is_target
        new.repeated_attrs = list(self.repeated_attrs)
        return new

    def __repr__(self) -> str:
        return f"OpDesc({self.type!r}, inputs={self.inputs}, outputs={self.outputs})"


def infer_attr_type(value) -> int:
    if isinstance(value, bool):
        return AttrType.BOOLEAN
    if isinstance(value, int):
        return AttrType.INT if -(2**31) <= value < 2**31 else AttrType.LONG
    if isinstance(value, float):
        return AttrType.FLOAT
    if isinstance(value, str):
        return AttrType.STRING
    if isinstance(value, (list, tuple)):
        if not value:
            return AttrType.INTS
        first = value[0]
        if isinstance(first, bool):
            return AttrType.BOOLEANS
        if isinstance(first, int):
            return AttrType.INTS if all(-(2**31) <= v < 2**31 for v in value) else AttrType.LONGS
        if isinstance(first, float):
            return AttrType.FLOATS
        if isinstance(first, str):
            return AttrType.STRINGS
    raise TypeError(f"cannot infer the attribute type of {value!r}")


class Block:
    __slots__ = ("program", "idx", "parent_idx", "vars", "ops", "forward_block_idx", "__weakref__")

    def __init__(self, program: Program, idx: int, parent_idx: int = -1):
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.vars: dict[str, VarDesc] = {}
        self.ops: list[OpDesc] = []
        self.forward_block_idx: int | None = None

    @property
    def parent(self) -> Block | None:
        return self.program.blocks[self.parent_idx] if self.parent_idx >= 0 else None

    def find_var(self, name: str) -> VarDesc | None:
        """The var visible from this block: its own, else the nearest ancestor's."""
        block: Block | None = self
        while block is not None:
            var = block.vars.get(name)
            if var is not None:
                return var
            block = block.parent
        return None

    def visible_var(self, name: str) -> VarDesc | None:
        """The var as ops of this block see it: like find_var, and a backward block (forward_block_idx set)
        of a control-flow op also sees the vars of the forward block it differentiates, at each level."""
        block: Block | None = self
        while block is not None:
            var = block.vars.get(name)
            forward = block.forward_block_idx
            if var is None and forward is not None and forward >= 0:
                var = self.program.blocks[forward].vars.get(name)
            if var is not None:
                return var
            block = block.parent
        return None

    def var(self, name: str) -> VarDesc:
        var = self.find_var(name)
        if var is None:
            from ..errors import ProgramError
            raise ProgramError(f"block {self.idx}: no var named '{name}'")
        return var

    def add_var(self, var: VarDesc) -> VarDesc:
        self.vars[var.name] = var
        self.program.mark_changed()
        return var

    def create_var(self, name: str, shape=None, dtype=VarType.FP32, **flags) -> VarDesc:
        return self.add_var(VarDesc(name, shape, dtype, **flags))

    def append_op(self, type: str, inputs=None, outputs=None, attrs=None, attr_types=None) -> OpDesc:
        op = OpDesc(type, inputs, outputs, attrs, attr_types)
        self.ops.append(op)
        self.program.mark_changed()
        return op

    def __repr__(self) -> str:
        return f"Block({self.idx}, parent={self.parent_idx}, {len(self.vars)} vars, {len(self.ops)} ops)"


class Program:
    """A ProgramDesc. ``revision`` counts changes: the IR's own mutators and every pass bump it (code that
    edits the lists and dicts directly calls ``mark_changed``), so caches such as the executor's plans
    know when to rebuild. ``version`` is the ProgramDesc's wire Version field, not this."""

    __slots__ = ("blocks", "version", "op_version_map", "revision")

    def __init__(self):
        self.revision = 0
        self.blocks: list[Block] = [Block(self, 0, -1)]
        self.version: int | None = None
        self.op_version_map: list[tuple[str, int]] | None = None

    def mark_changed(self) -> None:
        self.revision += 1

    @classmethod
    def empty(cls) -> Program:
        program = cls()
        program.blocks = []
        return program

    @property
    def global_block(self) -> Block:
        return self.blocks[0]

    def block(self, idx: int) -> Block:
        return self.blocks[idx]

    def append_block(self, parent_idx: int) -> Block:
        block = Block(self, len(self.blocks), parent_idx)
        self.blocks.append(block)
        self.mark_changed()
        return block

    def num_ops(self) -> int:
        return sum(len(b.ops) for b in self.blocks)

    def blocks_run_by(self, op: OpDesc) -> list[int]:
        """The blocks ``op`` runs where it stands: those it names (indices outside the program skipped), less a
        backward block whose forward block it names too (a pylayer keeps the user's backward block for its grad
        op, which runs it)."""
        refs = [idx for _, idx in op.block_refs() if 0 < idx < len(self.blocks)]
        return [idx for idx in refs if self.blocks[idx].forward_block_idx not in refs]

    @gc_paused()   # a copy of a large program is all new objects: the collector's passes tripled its time
    def clone(self) -> Program:
        new = Program.empty()
        new.version = self.version
        new.op_version_map = list(self.op_version_map) if self.op_version_map is not None else None
        for block in self.blocks:
            copy = Block(new, block.idx, block.parent_idx)
            copy.forward_block_idx = block.forward_block_idx
            copy.vars = {name: var.copy() for name, var in block.vars.items()}
            copy.ops = [op.copy() for op in block.ops]
            new.blocks.append(copy)
        return new

    def __repr__(self) -> str:
        return f"Program({len(self.blocks)} blocks, {self.num_ops()} ops)"
