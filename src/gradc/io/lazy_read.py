"""A binary ProgramDesc loaded without reading its blocks: each block's vars and ops are read from the file's bytes,
and checked, on their first use (gradc.ir.Block.__getattr__), so that a load costs little more than finding the
blocks.

What a load still checks at once: the program's own fields fit in the file (a file cut short anywhere is refused
then, since every block is length-prefixed), the blocks' indices, parent links and nesting (the frame), and the op
version map. A block's contents are checked when they are read, with the same checks and messages an eager load
gives (names, sub-block attributes, bytes protobuf would refuse): those errors reach the caller where it first
touches the block. `load(..., lazy=False)`, which the command line uses, reads every block at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..errors import FormatError
from ..gcpause import gc_paused
from ..ir import Block, Program
from ..passed_checks import STRUCTURE, kept, record
from ..verify import block_problems, frame, header_problems, raise_first
from .fast_read import Reader, Refused, Unusual, int32_at, program_layout


def read_lazily(data: bytes, source: str, eager: Callable[[], Program]) -> Program | None:
    """The program ``data`` holds with its blocks unread, or None where its own fields are not the plain layout
    (the caller then reads it eagerly). ``eager()`` reads the whole program with protobuf: a block the fast reader
    leaves to protobuf is taken from it, and it names the fault of bytes protobuf refuses."""
    layout = program_layout(data)
    if layout is None or not layout[0]:
        return None
    spans, header = layout
    program = Program.empty()
    reader = Reader()
    unread = UnreadBlocks(data, source, reader, eager)
    try:
        reader.header(program, header)
        for start, end in spans:
            idx, pos = int32_at(data, start + 1) if data[start] == 0x08 else (None, start)
            parent, pos = int32_at(data, pos + 1) if idx is not None and data[pos] == 0x10 else (None, pos)
            if parent is None or pos > end:
                return None
            unread.spans[len(program.blocks)] = (start, end)
            program.blocks.append(Block.unread(program, idx, parent, unread))
    except (Unusual, Refused, IndexError):
        return None
    problems, unread.depths = frame(program, source)
    raise_first(problems or header_problems(program, source))
    unread.parents = [block.parent_idx for block in program.blocks]
    record(program, STRUCTURE)   # each block's part of the check is made as it is read
    return program


class UnreadBlocks:
    """One loaded program's unread blocks: the file's bytes and the reader's tables, dropped once all are read.
    Holds no reference to the program, so that a dropped program is freed at once (as gradc.ir.program says)."""

    def __init__(self, data: bytes, source: str, reader: Reader, eager: Callable[[], Program]):
        self.data, self.source, self.reader, self.eager = data, source, reader, eager
        self.spans: dict[int, tuple[int, int]] = {}   # block index -> its bytes' span, while unread
        self.depths: list[int] = []
        self.parents: list[int] = []
        self.whole: Program | None = None   # the eager read, made once a block needs it
        self.lock = threading.RLock()

    @gc_paused(keeps=True)
    def read(self, block: Block) -> None:
        with self.lock:
            if block._unread is None:   # another thread read it first
                return
            start, end = self.spans[block.idx]
            try:   # the program may be gone (a block kept alone): reading needs only its frame, noted at load
                read = self.reader.block(Program.empty(), self.data, start, end)
            except (Unusual, Refused, IndexError):
                read = self._eager_block(block.idx)
            if (read.idx, read.parent_idx) != (block.idx, block.parent_idx):
                raise FormatError(f"{self.source}: block {block.idx} gives its idx or parent_idx twice, with "
                                  f"different values")
            raise_first(block_problems(self.parents, block.idx, read.vars, read.ops, self.source, self.depths))
            with kept(block._program()):
                for name in ("vars", "ops", "forward_block_idx"):
                    if not _is_set(block, name):   # one the caller set before reading stays
                        setattr(block, name, getattr(read, name))
                block._unread = None
            del self.spans[block.idx]
            if not self.spans:
                self.data = self.reader = self.whole = self.eager = None

    def _eager_block(self, idx: int) -> Block:
        if self.whole is None:
            self.whole = self.eager()
        return self.whole.blocks[idx]


_SLOTS = {name: getattr(Block, name) for name in ("vars", "ops", "forward_block_idx")}


def _is_set(block: Block, name: str) -> bool:
    try:
        _SLOTS[name].__get__(block, Block)   # the slot itself: no __getattr__, so no read
    except AttributeError:
        return False
    return True
