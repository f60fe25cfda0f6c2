"""Checks that a program is well formed, with errors that say where the problem is: structure (blocks) and
declared vars (gradc.verify_shapes checks each op's definition and shapes).

Each check is a generator of problems (one line each, naming block, op and var), so `gradc.verify` can
report every problem at once; the ``check_*`` functions raise ProgramError on the first, for the passes
that must stop there."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .errors import ProgramError, op_location
from .ir import EMPTY_VAR, AttrType, Program
from .opdef import get as get_opdef
from .ops.pylayer import user_backward_blocks
from .passed_checks import STRUCTURE, record

MAX_NESTING = 64   # blocks inside blocks: far beyond real programs, and it bounds every recursive walk


def raise_first(problems: Iterable[str]) -> None:
    """Raise the first problem (the rest are not computed)."""
    problem = next(iter(problems), None)
    if problem is not None:
        raise ProgramError(problem)


def check_structure(program: Program, source: str = "program") -> None:
    raise_first(structure_problems(program, source))
    record(program, STRUCTURE)   # the verify pass after a load need not check again


def structure_problems(program: Program, source: str = "program") -> Iterator[str]:
    """Block indices, parent links (acyclic, at most MAX_NESTING deep) and sub-block attributes are
    consistent; every name is text without control characters. Linear in the program's size. A problem
    with the blocks themselves ends the walk: nothing after it could be read safely."""
    problems, depths = frame(program, source)
    if problems:
        yield from problems
        return
    yield from header_problems(program, source)
    parents = [block.parent_idx for block in program.blocks]
    for block in program.blocks:
        yield from block_problems(parents, block.idx, block.vars, block.ops, source, depths)


def header_problems(program: Program, source: str) -> Iterator[str]:
    for name, _ in program.op_version_map or ():
        if _bad_name(name):
            yield f"{source}: the op version map names {name!r}, which is not printable text"


def block_problems(parents: list[int], idx: int, vars: dict, ops: list, source: str,
                   depths: list[int]) -> Iterator[str]:
    """The problems of one block's contents, given before they are the block's own (a loaded block's, checked as
    they are read): its names, and the blocks its ops' attributes name (``parents``: each block's parent_idx)."""
    yield from _name_problems(idx, vars, ops, source)
    for op_idx, op in enumerate(ops):
        if _BLOCK_KINDS.isdisjoint(op.attr_types.values()):   # most ops: no block attribute to check
            continue
        for name, kind in op.attr_types.items():
            if kind == AttrType.BLOCK and op.attrs[name] is None:
                yield (f"{source}: {op_location(idx, op_idx, op.type)}: attribute '{name}' "
                       f"is a block reference with no block index")
        for name, sub in op.block_refs():
            yield from _sub_block_problems(parents, idx, op_idx, op.type, name, sub, source, depths)


_BLOCK_KINDS = frozenset({AttrType.BLOCK, AttrType.BLOCKS})


def frame_problems(program: Program, source: str = "program") -> list[str]:
    """Problems with the blocks themselves (indices, parent links, nesting): after one, nothing else can be
    walked safely."""
    return frame(program, source)[0]


def frame(program: Program, source: str) -> tuple[list[str], list[int]]:
    """The frame's problems, and each block's nesting depth when there are none: what can be checked before any
    block's contents are read."""
    problems = list(_block_problems(program, source))
    depths: list[int] = []
    if not problems:
        problems = list(_nesting_depths(program, source, depths))[:1]
    return problems, depths


def _block_problems(program: Program, source: str) -> Iterator[str]:
    count = len(program.blocks)
    for position, block in enumerate(program.blocks):
        if block.idx != position:
            yield f"{source}: block at position {position} says its idx is {block.idx}"
        if position == 0 and block.parent_idx != -1:
            yield f"{source}: block 0 must have parent_idx -1, not {block.parent_idx}"
        if position > 0 and not 0 <= block.parent_idx < count:
            yield f"{source}: block {position} has parent_idx {block.parent_idx}, but the program has {count} blocks"


def _nesting_depths(program: Program, source: str, depths: list[int]) -> Iterator[str]:
    """Fills ``depths``: each block's distance from block 0 along parent links, each link followed once;
    yields the problem (a cycle, too deep) that stops it."""
    depths.extend([-1] * len(program.blocks))
    depths[0] = 0
    for block in program.blocks:
        path, on_path, idx = [], set(), block.idx
        while depths[idx] < 0:
            if idx in on_path:
                yield f"{source}: block {block.idx}: cycle in parent links through block {idx}"
                return
            path.append(idx)
            on_path.add(idx)
            idx = program.blocks[idx].parent_idx
        for offset, idx in enumerate(reversed(path), start=1):
            depths[idx] = depths[program.blocks[path[-1]].parent_idx] + offset
        if path and depths[path[0]] > MAX_NESTING:
            yield (f"{source}: block {path[0]} is nested {depths[path[0]]} blocks deep; gradc "
                   f"handles at most {MAX_NESTING}")
            return


_TEXT_ATTRS = {AttrType.STRING, AttrType.STRINGS, AttrType.VAR, AttrType.VARS}


_STR = frozenset({str})


def _as_list(value) -> list:
    return value if isinstance(value, list) else [] if value is None else [value]


def _bad_name(name) -> bool:
    return type(name) is not str or not name.isprintable()


def _name_problems(idx: int, vars: dict, ops: list, source: str) -> Iterator[str]:
    """Names are text a user can read in one line: not undecodable bytes, no control characters. Checked
    in bulk (one join per block); the slow search for the culprits runs only when something is wrong."""
    names = list(vars)
    texts = []   # text attribute values: they must be str
    for op in ops:
        names.append(op.type)
        for slots in (op.inputs, op.outputs):
            names += slots
            for args in slots.values():
                names += args
        attrs, kinds = op.attrs, op.attr_types
        names += attrs
        if _TEXT_ATTRS.isdisjoint(kinds.values()):
            continue
        for name, value in attrs.items():
            if kinds[name] in _TEXT_ATTRS and value is not None:
                if type(value) is list:
                    texts += value
                else:
                    texts.append(value)
    if not (_STR.issuperset(map(type, names)) and "".join(names).isprintable() and _STR.issuperset(map(type, texts))):
        yield from _bad_names(idx, vars, ops, source)


def _bad_names(idx: int, vars: dict, ops: list, source: str) -> Iterator[str]:
    for name in vars:
        if _bad_name(name):
            yield f"{source}: block {idx} declares a var whose name {name!r} is not printable text"
    for op_idx, op in enumerate(ops):
        where = f"{source}: block {idx}, op {op_idx}"
        if _bad_name(op.type):
            yield f"{where}: the op type {op.type!r} is not printable text"
            continue
        for slots in (op.inputs, op.outputs):
            for slot, args in slots.items():
                for name in (slot, *args):
                    if _bad_name(name):
                        yield f"{where} ({op.type}): slot {slot!r} names {name!r}, which is not printable text"
        for name, value in op.attrs.items():
            if _bad_name(name):
                yield f"{where} ({op.type}): attribute name {name!r} is not printable text"
            elif op.attr_types[name] in _TEXT_ATTRS and not all(type(v) is str for v in _as_list(value)):
                yield f"{where} ({op.type}): attribute '{name}' holds bytes that are not UTF-8 text"


def _sub_block_problems(parents, block_idx, op_idx, op_type, attr, sub, source, depths) -> Iterator[str]:
    where = f"{source}: {op_location(block_idx, op_idx, op_type)}"
    if not 0 < sub < len(parents):
        yield f"{where}: attribute '{attr}' names block {sub}, but the program has {len(parents)} blocks"
        return
    ancestor = block_idx if depths[sub] <= depths[block_idx] else -1   # only an ancestor can close a cycle
    while ancestor != -1:
        if ancestor == sub:
            yield f"{where}: attribute '{attr}' names block {sub}, which contains this op: a cycle"
            return
        ancestor = parents[ancestor]


def _undeclared_input(op_type: str, slot: str) -> bool:
    """Whether the input slot is one the op's definition lets name a var no program declares."""
    opdef = get_opdef(op_type)
    return opdef is not None and slot in opdef.undeclared_inputs


def check_vars(program: Program) -> None:
    raise_first(var_problems(program))


def var_problems(program: Program) -> Iterator[str]:
    """Every var an op reads or writes is declared in its block or an ancestor (or, in a pylayer's backward
    block, is an output grad its grad op hands it)."""
    handed = user_backward_blocks(program)
    for block in program.blocks:
        own = block.vars   # most names are the block's own: a dict test before the walk up the ancestors
        given = handed.get(block.idx, ())
        for op_idx, op in enumerate(block.ops):
            checks = (("reads", "slot", op.inputs), ("writes", "slot", op.outputs))
            if op.var_attrs:
                checks += (("reads", "attribute", op.attr_reads()),)
            for direction, kind, slots in checks:
                for where, args in slots.items():
                    for name in args:
                        if name not in own and name != EMPTY_VAR and name not in given \
                                and block.visible_var(name) is None \
                                and not (slots is op.inputs and _undeclared_input(op.type, where)):
                            yield (f"{op_location(block.idx, op_idx, op.type)} {direction} var '{name}' "
                                   f"({kind} {where}), which is not declared in block {block.idx} or its ancestors")
