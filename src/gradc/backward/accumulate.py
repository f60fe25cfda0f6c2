"""Several grad ops writing one gradient: rename each write, then sum them before the first read.

Paddle's convention: writers of ``v@GRAD`` become ``v@GRAD@RENAME@block{b}@{k}`` and a ``sum`` op
writes ``v@GRAD`` just before its first reader (or at the end of the backward ops).

A var the forward program writes twice (a loop var, an in-place op) has one gradient per value:
``forget`` ends the current one, and a grad op that reads and writes a name starts a new one.
A var declared before the pass is no grad of it: a control-flow grad op's replay writes that op's outputs again
(gradc.ops.control_flow_double.differentiated_run), two replays of grad ops updating one grad in place write it in
turn, and those values are not summed.
"""

from __future__ import annotations

from collections.abc import Collection

from ..ir import EMPTY_VAR, OpDesc


class GradAccumulator:
    def __init__(self, block_idx: int, values: frozenset[str] | set[str] = frozenset({EMPTY_VAR})):
        self.block_idx = block_idx
        # the vars declared before the pass, written again, never renamed or summed, and EMPTY_VAR (no var): one test
        self.values = values
        self.first_write: dict[str, OpDesc | None] = {}  # grad -> its single writer so far (None: the caller's)
        self.pending: dict[str, list[str]] = {}   # grad -> renamed parts awaiting a sum
        self.renames: dict[str, int] = {}         # grad -> parts named so far (names stay unique)

    def is_written(self, name: str) -> bool:
        return name in self.first_write

    def give(self, name: str) -> None:
        self.first_write[name] = None   # the caller provides it: it keeps its name when others add to it

    def forget(self, name: str) -> None:
        """The forward value this grad belongs to is gone: the next writer starts afresh."""
        self.first_write.pop(name, None)
        self.pending.pop(name, None)

    def record_outputs(self, op: OpDesc, reads: list[str] | None = None,
                       written: Collection[str] | None = None) -> None:
        """Register the op's writes (``reads``: its input names, ``written``: its output names, when the caller has
        them), renaming them when a grad gets a second writer."""
        reads = op.input_names() if reads is None else reads
        if len(reads) > 8:   # an op's few reads are searched as a list, without a set built per op
            reads = set(reads)
        values, first_write = self.values, self.first_write
        if written is not None:   # most ops write grads no op wrote yet, each once, none they read: no walk of slots
            for name in written:
                if name in first_write or name in values or name in reads:
                    break
                first_write[name] = op
            else:
                return
            for name in written:   # undone: the walk below takes each write in turn (a second writer, a restart)
                if first_write.get(name) is op:
                    del first_write[name]
        restarted: tuple[str, ...] = ()   # grads this op reads and writes (rare): a tuple made when one is met
        for args in op.outputs.values():
            for name in args:
                if name in values:
                    continue
                if name in reads and name not in restarted:   # a new value's grad starts; a second write adds to it
                    self.forget(name)
                    restarted += (name,)
                if name not in first_write:
                    first_write[name] = op
                    continue
                parts = self.pending.get(name)
                if parts is None:   # second writer: rename the first one too
                    first_op = first_write[name]
                    parts = self.pending[name] = [name if first_op is None else self._rename(name)]
                    if first_op is not None:
                        _rename_first_output(first_op, name, parts[0])
                parts.append(self._rename(name))
                args[args.index(name)] = parts[-1]   # the first of its writes not renamed yet: this one

    def _rename(self, name: str) -> str:
        k = self.renames.get(name, 0)
        self.renames[name] = k + 1
        part = f"{name}@RENAME@block{self.block_idx}@{k}"
        return part

    def sums_before(self, reads: list[str]) -> list[OpDesc]:
        """The sum ops that must run before an op that ``reads`` these names: of grads with several writers."""
        pending = self.pending
        return [self._sum(name) for name in reads if name in pending] if pending else []

    def remaining_sums(self) -> list[OpDesc]:
        return [self._sum(name) for name in list(self.pending)]

    def _sum(self, name: str) -> OpDesc:
        parts = self.pending.pop(name)
        op = OpDesc("sum", {"X": parts}, {"Out": [name]})
        self.first_write[name] = op
        return op


def _rename_first_output(op: OpDesc, name: str, renamed: str) -> None:
    """The first output of ``op`` named ``name`` renamed: where its first writer wrote the grad, looked for only when
    a second writer comes (most grads have one, and keep no position)."""
    for args in op.outputs.values():
        if name in args:
            args[args.index(name)] = renamed
            return
