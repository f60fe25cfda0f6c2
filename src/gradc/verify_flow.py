"""Checks over the order of a program's ops (what `gradc verify` adds to gradc.verify's per-op checks):
every block is run by some op, every var is written before it is read (unless it is fed or persistable),
and no gradient is written twice with nothing reading the first value (a lost contribution).

Each check is a generator of one-line problems naming block, op and var."""

from __future__ import annotations

import functools
from collections.abc import Iterator

from . import registry
from .errors import op_location
from .ir import EMPTY_VAR, GRAD_SUFFIX, Block, Program, VarType


def _sub_blocks(program: Program, block: Block) -> Iterator[tuple[int, int]]:
    """(op index, block index) of each block an op of ``block`` runs; indices outside the program skipped."""
    if len(program.blocks) == 1:   # most programs: no other block to run, no attribute to read
        return
    for idx, op in enumerate(block.ops):
        for _, sub in op.block_refs():
            if 0 < sub < len(program.blocks):
                yield idx, sub


def unreachable_block_problems(program: Program) -> Iterator[str]:
    """A block that no op of a reachable block runs (block 0 runs by itself) is dead weight or a broken link; but not
    one whose every op is also an op of a block that runs (Paddle's leftovers)."""
    reached, todo = {0}, [0]
    while todo:
        for _, sub in _sub_blocks(program, program.blocks[todo.pop()]):
            if sub not in reached:
                reached.add(sub)
                todo.append(sub)
    unreached = [block for block in program.blocks if block.idx not in reached]
    run = {_op_key(op) for idx in reached for op in program.blocks[idx].ops} if unreached else set()
    for block in unreached:
        # Paddle's recompute builds its segments in scratch blocks, copies their ops into block 0 and leaves them
        if not (block.ops and all(_op_key(op) in run for op in block.ops)):
            yield (f"block {block.idx} (parent {block.parent_idx}, {len(block.ops)} ops) never runs: no op that "
                   f"block 0 runs, directly or through other blocks, names it in a block attribute")


def _op_key(op) -> tuple:
    """An op by its type and the vars of its slots."""
    return (op.type, tuple(sorted((slot, tuple(names)) for slot, names in op.inputs.items())),
            tuple(sorted((slot, tuple(names)) for slot, names in op.outputs.items())))


def _written_in_tree(program: Program, block_idx: int, seen: set[int] | None = None) -> set[str]:
    """Every name written by the ops of a block and of the blocks they run, recursively."""
    seen = set() if seen is None else seen
    seen.add(block_idx)
    names: set[str] = set()
    block = program.blocks[block_idx]
    for op in block.ops:
        names.update(op.output_names())
    for _, sub in _sub_blocks(program, block):
        if sub not in seen:
            names |= _written_in_tree(program, sub, seen)
    return names


def _inputs(program: Program) -> set[str]:
    """Names that are given rather than computed: persistable vars, vars marked to be fed, tensor arrays (they
    start empty) and vars no op of the program writes (the caller must feed them)."""
    written, read = set(), set()
    for block in program.blocks:
        for op in block.ops:
            written.update(*op.outputs.values())
            read.update(op.input_names())
    given = {name for block in program.blocks for name, var in block.vars.items()
             if var.persistable or var.need_check_feed or var.type == VarType.DENSE_TENSOR_ARRAY}
    return given | (read - written)


def unwritten_read_problems(program: Program) -> Iterator[str]:
    """Walks the ops in the order they run: an op reads only names given to the program or written before
    it. A sub-block sees what its parent had written when its op runs, that op's own slots, and (a backward
    block) everything its forward block wrote."""

    @functools.cache
    def first_writers() -> dict[str, tuple[int, int, str]]:   # for the messages: only asked when one is due
        first = {}
        for block in program.blocks:
            for idx, op in enumerate(block.ops):
                for name in op.output_names():
                    first.setdefault(name, (block.idx, idx, op.type))
        return first

    yield from _walk(program, 0, _inputs(program), first_writers, {0})


def _state_inputs(op_type: str) -> frozenset[str]:
    opdef = registry.get(op_type)
    return opdef.state_inputs if opdef is not None else frozenset()


def _walk(program: Program, block_idx: int, defined: set[str], first_writers, on_path: set[int]):
    block = program.blocks[block_idx]
    defined = set(defined)
    defined.add(EMPTY_VAR)   # an empty slot reads nothing
    forward = block.forward_block_idx
    if forward is not None and 0 <= forward < len(program.blocks):
        defined |= _written_in_tree(program, forward)
    for idx, op in enumerate(block.ops):
        reads = (("slot", op.inputs), ("attribute", op.attr_reads())) if op.var_attrs else (("slot", op.inputs),)
        for kind, slots in reads:
            for key, args in slots.items():
                if defined.issuperset(args) or (kind == "slot" and key in _state_inputs(op.type)):
                    continue
                for name in args:
                    if name not in defined:
                        where = first_writers().get(name)
                        later = f"; {op_location(*where)} writes it" if where else ""
                        yield (f"{op_location(block.idx, idx, op.type)} reads var '{name}' ({kind} {key}) before "
                               f"any op writes it, and it is neither persistable nor fed{later}")
                    defined.add(name)   # one report per name
        for sub in program.blocks_run_by(op):
            if sub not in on_path:
                yield from _walk(program, sub, defined | set(op.input_names()) | set(op.output_names()),
                                 first_writers, on_path | {sub})
                defined |= _written_in_tree(program, sub)
        defined.update(*op.outputs.values())


def _reads(program: Program, op, seen: set[int]) -> list[str] | set[str]:
    """The names an op reads, with everything the blocks it runs touch (they may read any of them)."""
    refs = op.block_refs() if len(program.blocks) > 1 else ()   # most programs: no other block to run
    if not refs:
        return op.input_names()
    names = set(op.input_names())
    for _, sub in refs:
        if 0 < sub < len(program.blocks) and sub not in seen:
            seen.add(sub)
            for inner in program.blocks[sub].ops:
                names.update(_reads(program, inner, seen), inner.output_names())
    return names


def grad_writer_problems(program: Program) -> Iterator[str]:
    """Each gradient has one final writer: an op that writes a grad var another op wrote before, with no op
    reading it in between (nor itself), throws a contribution away; such writes must be summed."""
    for block in program.blocks:
        unread: dict[str, tuple[int, str]] = {}
        for idx, op in enumerate(block.ops):
            for name in _reads(program, op, {block.idx}):
                unread.pop(name, None)
            for name in op.output_names():
                if GRAD_SUFFIX not in name or name == EMPTY_VAR:
                    continue
                if name in unread and not getattr(registry.get(op.type), "partial_write", False):
                    first_idx, first_type = unread[name]
                    yield (f"{op_location(block.idx, idx, op.type)} writes '{name}', which "
                           f"{op_location(block.idx, first_idx, first_type)} wrote and nothing read: that "
                           f"gradient contribution is lost (several writers must be summed)")
                unread[name] = (idx, op.type)
