"""The in-memory program: blocks of VarDescs and OpDescs (gradc.ir.descs), converted to and from protobuf only
in gradc.io."""

from __future__ import annotations

import weakref

from ..gcpause import gc_paused
from .descs import OpDesc, VarDesc
from .types import VarType


def _no_program() -> None:   # a block copied or unpickled on its own: as if its program were dropped
    return None


_READ_LATE = frozenset({"vars", "ops", "forward_block_idx"})


class Block:
    """A block refers to its program weakly: a Program and its blocks form no reference cycle, so a dropped program
    is freed at once by reference counting instead of waiting for a full pass of the cyclic collector."""

    __slots__ = ("_program", "idx", "parent_idx", "vars", "ops", "forward_block_idx", "derived", "_unread",
                 "__weakref__")

    def __init__(self, program: Program, idx: int, parent_idx: int = -1):
        self._program = weakref.ref(program)
        self.idx = idx
        self.parent_idx = parent_idx
        self.vars: dict[str, VarDesc] = {}
        self.ops: list[OpDesc] = []
        self.forward_block_idx: int | None = None
        # what an executor derives from the block (its plans), kept here so that it dies with the block
        self.derived = None
        self._unread = None   # a loaded block's bytes not read yet (gradc.io.lazy_read): its contents come on first use

    def __getattr__(self, name: str):
        """A loaded block's vars, ops and forward_block_idx, read from its bytes on first use (only then is this
        called: a slot that is set is found without it)."""
        unread = self._unread if name in _READ_LATE else None
        if unread is None:
            raise AttributeError(f"'Block' object has no attribute {name!r}")
        unread.read(self)
        return getattr(self, name)

    def sizes(self) -> tuple[int, int] | None:
        """Its op and var counts; None for a loaded block not read yet (reading it does not count as a change)."""
        return None if self._unread is not None else (len(self.ops), len(self.vars))

    @classmethod
    def unread(cls, program: Program, idx: int, parent_idx: int, unread) -> Block:
        """A loaded block whose contents ``unread.read(block)`` gives on first use."""
        block = cls.__new__(cls)
        block._program, block.idx, block.parent_idx = weakref.ref(program), idx, parent_idx
        block.derived, block._unread = None, unread
        return block

    @property
    def program(self) -> Program:
        program = self._program()
        if program is None:
            from ..errors import ProgramError
            raise ProgramError(f"block {self.idx} belongs to no program (its program was dropped, or the block was "
                               f"copied alone); keep a reference to the Program while its blocks are used")
        return program

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

    def unused_name(self, pattern: str) -> str:
        """The first ``pattern.format(n)``, n = 0, 1, ..., that no var visible here has (Paddle's unique names)."""
        n = 0
        while self.find_var(pattern.format(n)) is not None:
            n += 1
        return pattern.format(n)

    def var(self, name: str) -> VarDesc:
        var = self.find_var(name)
        if var is None:
            from ..errors import ProgramError
            raise ProgramError(f"block {self.idx}: no var named '{name}'")
        return var

    def add_var(self, var: VarDesc) -> VarDesc:
        self.vars[var.name] = var
        self._changed()
        return var

    def create_var(self, name: str, shape=None, dtype=VarType.FP32, **flags) -> VarDesc:
        return self.add_var(VarDesc(name, shape, dtype, **flags))

    def append_op(self, type: str, inputs=None, outputs=None, attrs=None, attr_types=None) -> OpDesc:
        op = OpDesc(type, inputs, outputs, attrs, attr_types)
        self.ops.append(op)
        self._changed()
        return op

    def __getstate__(self) -> dict:
        """Pickled and deep-copied without the link to its program (the Program restores it) or what an executor
        derived from it."""
        return {name: getattr(self, name) for name in ("idx", "parent_idx", "vars", "ops", "forward_block_idx")}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._program, self.derived, self._unread = _no_program, None, None

    def _changed(self) -> None:
        program = self._program()
        if program is not None:   # a block kept after its program: nothing is cached on a program that is gone
            program.mark_changed()

    def __repr__(self) -> str:
        return f"Block({self.idx}, parent={self.parent_idx}, {len(self.vars)} vars, {len(self.ops)} ops)"


class Program:
    """A ProgramDesc. ``revision`` counts changes: the IR's own mutators and every editing pass bump it (code that
    edits the lists and dicts directly calls ``mark_changed``), so caches such as the executor's plans
    know when to rebuild. ``version`` is the ProgramDesc's wire Version field, not this."""

    __slots__ = ("blocks", "version", "op_version_map", "revision", "__weakref__")

    def __init__(self):
        self.revision = 0
        self.blocks: list[Block] = [Block(self, 0, -1)]
        self.version: int | None = None
        self.op_version_map: list[tuple[str, int]] | None = None

    def mark_changed(self) -> None:
        self.revision += 1

    def __getstate__(self) -> dict:
        return {name: getattr(self, name) for name in ("blocks", "version", "op_version_map", "revision")}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        for block in self.blocks:   # a copy's blocks belong to the copy
            block._program = weakref.ref(self)

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

    def declares(self, name: str) -> bool:
        """Whether any block declares ``name``."""
        return any(name in block.vars for block in self.blocks)

    def unused_name(self, pattern: str) -> str:
        """The first ``pattern.format(n)``, n = 0, 1, ..., that no block declares (Paddle's unique names count the
        sub-blocks' vars too, where Block.unused_name sees only the visible ones)."""
        n = 0
        while self.declares(pattern.format(n)):
            n += 1
        return pattern.format(n)

    def blocks_run_by(self, op: OpDesc) -> list[int]:
        """The blocks ``op`` runs where it stands: those it names (indices outside the program skipped), less a
        backward block whose forward block it names too (a pylayer keeps the user's backward block for its grad
        op, which runs it)."""
        if len(self.blocks) == 1:   # most programs: no other block to run, no attribute to read
            return []
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
