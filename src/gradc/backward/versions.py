"""Forward values that are overwritten before the backward reads them, and the copies that keep them.

Grad ops read forward values by name. The name must still hold the value the forward op saw when
the backward runs, and a program may write a name twice: a loop var updated in its body, a var an
inner loop updates in place and an outer body reads afterwards. Where the backward runs:
- in a block's own scope, a name holds the block's last write of it;
- in a while body, a loop var (read and written by the body) holds its value at the start of the
  iteration (the while kernel keeps it in the step scope), unless an op of the body updates it in place
  (a counter's increment: Paddle keeps no copy of it), and any other outer var the body writes holds
  what the last iteration left;
- a name the block does not write holds what its parent block has at the control-flow op.
Where that is not the value the forward op saw, the grad op reads a copy made right after the
forward op (``v@SAVE@{block}@{op}``, an ``assign`` inserted into the forward block). An op that
overwrites one of its inputs (``y = y * w``) saw the value before it: that copy is made right after
the previous op (``@-1``: at the start of the block).
"""

from __future__ import annotations

from .. import registry
from ..ir import Block, OpDesc, roles
from ..ops.control_flow import updated_in_place
from .vars import derived_var

_UNWRITTEN = (None, -1)


class Versions:
    def __init__(self, program):
        self.program = program
        self.owner: dict[int, tuple[Block, int]] = {    # sub-block -> (its block, control-flow op index)
            sub: (block, idx) for block in program.blocks for sub, idx in registry.sub_blocks_run(block).items()}
        self._writes: dict[int, dict[str, tuple[int, int]]] = {}
        self._rewritten: dict[int, set[str]] = {}   # per block: names an op writes after an earlier op used them
        self._in_place: dict[int, set[str]] = {}
        self.saves: dict[tuple[int, int, str], OpDesc] = {}

    def writes(self, block: Block) -> dict[str, tuple[int, int]]:
        """name -> (index of the first op of ``block`` that writes it, index of the last)."""
        writes = self._writes.get(block.idx)
        if writes is None:
            writes = self._writes[block.idx] = {}
            for idx, op in enumerate(block.ops):
                for args in op.outputs.values():
                    for name in args:
                        writes[name] = (writes.get(name, (idx,))[0], idx)
        return writes

    def rewritten(self, block: Block) -> set[str]:
        """The names an op of ``block`` writes after an earlier op used (read or wrote) them, or that it reads."""
        rewritten = self._rewritten.get(block.idx)
        if rewritten is None:
            rewritten = self._rewritten[block.idx] = set()
            # from the last op back: the names written by an op or a later one, looked up, not every name used inserted
            later: set[str] = set()
            add, unwritten = later.add, later.isdisjoint
            for op in reversed(block.ops):
                for args in op.outputs.values():
                    for name in args:
                        if name in later:
                            rewritten.add(name)
                        add(name)
                for args in op.inputs.values():
                    if not unwritten(args):
                        rewritten.update(later.intersection(args))
                if op.var_attrs:
                    rewritten.update(later.intersection(op.attr_var_names()))
        return rewritten

    def in_place(self, block: Block) -> set[str]:
        names = self._in_place.get(block.idx)
        if names is None:
            names = self._in_place[block.idx] = updated_in_place(block)
        return names

    def stale(self, block: Block, idx: int, name: str) -> bool:
        """Whether ``name`` no longer holds its value after op ``idx`` of ``block`` (-1: at its start)
        when the backward runs."""
        while True:
            first, last = self.writes(block).get(name, (None, -1))
            owner = self.owner.get(block.idx)
            if name in block.vars or owner is None:
                return last > idx
            control_block, control_idx = owner
            control = control_block.ops[control_idx]
            carried = registry.get(control.type).loop_carried
            if carried and first is not None:
                if name in control.input(carried[0]) and name in control.output(carried[1]) \
                        and name not in self.in_place(block):   # kept per step
                    return first <= idx
                return True
            if last > idx:
                return True
            block, idx = control_block, control_idx

    def has_value_before(self, block: Block, op: OpDesc, name: str) -> bool:
        """Whether ``name`` may hold a value when ``op`` (of ``block``) starts: an earlier op of the
        block writes it, or it comes from an enclosing block."""
        first = self.writes(block).get(name, (None,))[0]
        return name not in block.vars or (first is not None and block.ops[first] is not op)

    def may_be_stale(self, block: Block, rewrites: bool | None = None) -> bool:
        """Whether a grad op of ``block`` may read a name that no longer holds its forward value (else ``reading``
        has nothing to do): in a block no control-flow op runs, a name holds its last write, so only one written
        after a use can be (``rewrites``: whether one is, where the caller knows, else rewritten finds out)."""
        return block.idx in self.owner or (bool(self.rewritten(block)) if rewrites is None else rewrites)

    def reading(self, grad_ops: list[OpDesc], block: Block, idx: int) -> None:
        """Point ``grad_ops`` (the grad ops of op ``idx`` of ``block``) at copies of stale forward values (the
        backward asks only where ``may_be_stale``: elsewhere none is)."""
        writes = self.writes(block) if block.idx not in self.owner else None
        fwd = block.ops[idx]
        if fwd.block_refs():   # it runs blocks: its grad op reads names, not values
            return
        inputs, outputs = set(fwd.input_names()), set(fwd.output_names())   # once per op: sum may have 1000s
        names, in_place = inputs | outputs, inputs & outputs
        aliases = registry.get(fwd.type).alias_outputs if in_place else ()
        if aliases:   # an output naming its input unchanged (hsigmoid's W_Out = W): the input keeps its value
            in_place = in_place.difference(*(fwd.outputs.get(slot, ()) for slot in aliases))
        for grad_op in grad_ops:
            for slot, args in grad_op.inputs.items():
                for pos, name in enumerate(args):
                    if name not in names:
                        continue
                    # read as the op's input (its slot is no forward output slot): the value before the op
                    at = idx - 1 if name in in_place and slot not in fwd.outputs else idx
                    if (writes.get(name, _UNWRITTEN)[1] > at) if writes is not None else self.stale(block, at, name):
                        args[pos] = self._save(block, at, name)

    def save(self, block: Block, idx: int, name: str) -> str:
        """A copy of ``name`` made right after op ``idx`` of ``block`` (-1: at its start), inserted with the others."""
        return self._save(block, idx, name)

    def _save(self, block: Block, idx: int, name: str) -> str:
        key = (block.idx, idx, name)
        if key not in self.saves:
            copy, count = f"{name}@SAVE@{block.idx}@{idx}", 2
            while copy in block.vars:   # an earlier backward's copy, made where its own numbering said op idx
                copy, count = f"{name}@SAVE@{block.idx}@{idx}@{count}", count + 1
            block.add_var(derived_var(block.var(name), copy))
            self.saves[key] = OpDesc("assign", {"X": [name]}, {"Out": [copy]})
            roles.set_role(self.saves[key], roles.FORWARD)
        return self.saves[key].output("Out")[0]

    def insert_saves(self, block: Block) -> None:
        """Put the copies of ``block`` right after the forward ops whose values they keep."""
        after: dict[int, list[OpDesc]] = {}
        for (block_idx, idx, _), op in self.saves.items():
            if block_idx == block.idx:
                after.setdefault(idx, []).append(op)
        if after:
            block.ops = [*after.get(-1, ()),
                         *(op for idx, fwd in enumerate(block.ops) for op in [fwd, *after.get(idx, ())])]
