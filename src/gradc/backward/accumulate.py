"""Several grad ops writing one gradient: rename each write, then sum them before the first read.

Paddle's convention: writers of ``v@GRAD`` become ``v@GRAD@RENAME@block{b}@{k}`` and a ``sum`` op
writes ``v@GRAD`` just before its first reader (or at the end of the backward ops).
"""

from __future__ import annotations

from ..ir import GRAD_SUFFIX, OpDesc


class GradAccumulator:
    def __init__(self, block_idx: int):
        self.block_idx = block_idx
        self.first_write: dict[str, tuple[OpDesc, str, int]] = {}  # grad -> its single writer so far
        self.pending: dict[str, list[str]] = {}   # grad -> renamed parts awaiting a sum
        self.renamed: dict[str, str] = {}         # renamed part -> grad it adds up to

    def is_written(self, name: str) -> bool:
        return name in self.first_write

    def record_outputs(self, op: OpDesc) -> None:
        """Register the op's writes, renaming them when a grad gets a second writer."""
        for slot, args in op.outputs.items():
            for pos, name in enumerate(args):
                if not name.endswith(GRAD_SUFFIX):  # @EMPTY@, or a maker's temporary rewritten in place
                    continue
                if name not in self.first_write:
                    self.first_write[name] = (op, slot, pos)
                    continue
                parts = self.pending.get(name)
                if parts is None:   # second writer: rename the first one too
                    first_op, first_slot, first_pos = self.first_write[name]
                    parts = self.pending[name] = [self._rename(name, 0)]
                    first_op.outputs[first_slot][first_pos] = parts[0]
                parts.append(self._rename(name, len(parts)))
                args[pos] = parts[-1]

    def _rename(self, name: str, k: int) -> str:
        part = f"{name}@RENAME@block{self.block_idx}@{k}"
        self.renamed[part] = name
        return part

    def sums_before(self, op: OpDesc) -> list[OpDesc]:
        """The sum ops that must run before ``op`` because it reads a grad with several writers."""
        return [self._sum(name) for name in op.input_names() if name in self.pending]

    def remaining_sums(self) -> list[OpDesc]:
        return [self._sum(name) for name in list(self.pending)]

    def _sum(self, name: str) -> OpDesc:
        parts = self.pending.pop(name)
        op = OpDesc("sum", {"X": parts}, {"Out": [name]})
        self.first_write[name] = (op, "Out", 0)
        return op
