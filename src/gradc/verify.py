"""Checks that a program is well formed, with errors that say where the problem is: structure (blocks),
declared vars, and shapes (every registered inference agrees with the declared vars)."""

from __future__ import annotations

from . import registry
from .errors import ProgramError, op_location
from .ir import EMPTY_VAR, AttrType, Program
from .ops.infer import InferContext
from .shapes import dims_match

MAX_NESTING = 64   # blocks inside blocks: far beyond real programs, and it bounds every recursive walk


def check_structure(program: Program, source: str = "program") -> None:
    """Block indices, parent links (acyclic, at most MAX_NESTING deep) and sub-block attributes are
    consistent; every name is text without control characters. Linear in the program's size."""
    count = len(program.blocks)
    for position, block in enumerate(program.blocks):
        if block.idx != position:
            raise ProgramError(f"{source}: block at position {position} says its idx is {block.idx}")
        if position == 0 and block.parent_idx != -1:
            raise ProgramError(f"{source}: block 0 must have parent_idx -1, not {block.parent_idx}")
        if position > 0 and not 0 <= block.parent_idx < count:
            raise ProgramError(f"{source}: block {position} has parent_idx {block.parent_idx}, "
                               f"but the program has {count} blocks")
    depths = _nesting_depths(program, source)
    for name, _ in program.op_version_map or ():
        if _bad_name(name):
            raise ProgramError(f"{source}: the op version map names {name!r}, which is not printable text")
    for block in program.blocks:
        _check_names(block, source)
        for op_idx, op in enumerate(block.ops):
            for name, kind in op.attr_types.items():
                if kind == AttrType.BLOCK and op.attrs[name] is None:
                    raise ProgramError(f"{source}: {op_location(block.idx, op_idx, op.type)}: attribute '{name}' "
                                       f"is a block reference with no block index")
            for name, sub in op.block_refs():
                _check_sub_block(program, block.idx, op_idx, op.type, name, sub, source, depths)


def _nesting_depths(program: Program, source: str) -> list[int]:
    """Each block's distance from block 0 along parent links, each link followed once."""
    depths = [-1] * len(program.blocks)
    depths[0] = 0
    for block in program.blocks:
        path, on_path, idx = [], set(), block.idx
        while depths[idx] < 0:
            if idx in on_path:
                raise ProgramError(f"{source}: block {block.idx}: cycle in parent links through block {idx}")
            path.append(idx)
            on_path.add(idx)
            idx = program.blocks[idx].parent_idx
        for offset, idx in enumerate(reversed(path), start=1):
            depths[idx] = depths[program.blocks[path[-1]].parent_idx] + offset
        if path and depths[path[0]] > MAX_NESTING:
            raise ProgramError(f"{source}: block {path[0]} is nested {depths[path[0]]} blocks deep; gradc "
                               f"handles at most {MAX_NESTING}")
    return depths


_TEXT_ATTRS = {AttrType.STRING, AttrType.STRINGS, AttrType.VAR, AttrType.VARS}


def _as_list(value) -> list:
    return value if isinstance(value, list) else [] if value is None else [value]


def _bad_name(name) -> bool:
    return type(name) is not str or not name.isprintable()


def _check_names(block, source: str) -> None:
    """Names are text a user can read in one line: not undecodable bytes, no control characters. Checked
    in bulk (one join per block); the slow search for the culprit runs only when something is wrong."""
    names = list(block.vars)
    for op in block.ops:
        names.append(op.type)
        for slots in (op.inputs, op.outputs):
            for slot, args in slots.items():
                names.append(slot)
                names.extend(args)
        names.extend(op.attrs)
    texts = [value for op in block.ops for name, value in op.attrs.items() if op.attr_types[name] in _TEXT_ATTRS]
    if not (all(type(n) is str for n in names) and "".join(names).isprintable()
            and all(type(v) is str for value in texts for v in _as_list(value))):
        _find_bad_name(block, source)


def _find_bad_name(block, source: str) -> None:
    for name in block.vars:
        if _bad_name(name):
            raise ProgramError(f"{source}: block {block.idx} declares a var whose name {name!r} is not "
                               f"printable text")
    for op_idx, op in enumerate(block.ops):
        where = f"{source}: block {block.idx}, op {op_idx}"
        if _bad_name(op.type):
            raise ProgramError(f"{where}: the op type {op.type!r} is not printable text")
        for slots in (op.inputs, op.outputs):
            for slot, args in slots.items():
                for name in (slot, *args):
                    if _bad_name(name):
                        raise ProgramError(f"{where} ({op.type}): slot {slot!r} names {name!r}, which is not "
                                           f"printable text")
        for name, value in op.attrs.items():
            if _bad_name(name):
                raise ProgramError(f"{where} ({op.type}): attribute name {name!r} is not printable text")
            if op.attr_types[name] in _TEXT_ATTRS and not all(type(v) is str for v in _as_list(value)):
                raise ProgramError(f"{where} ({op.type}): attribute '{name}' holds bytes that are not UTF-8 text")


def _check_sub_block(program, block_idx, op_idx, op_type, attr, sub, source, depths) -> None:
    where = f"{source}: {op_location(block_idx, op_idx, op_type)}"
    if not 0 < sub < len(program.blocks):
        raise ProgramError(f"{where}: attribute '{attr}' names block {sub}, "
                           f"but the program has {len(program.blocks)} blocks")
    ancestor = block_idx if depths[sub] <= depths[block_idx] else -1   # only an ancestor can close a cycle
    while ancestor != -1:
        if ancestor == sub:
            raise ProgramError(f"{where}: attribute '{attr}' names block {sub}, which contains "
                               f"this op: a cycle")
        ancestor = program.blocks[ancestor].parent_idx


def check_vars(program: Program) -> None:
    """Every var an op reads or writes is declared in its block or an ancestor."""
    for block in program.blocks:
        for op_idx, op in enumerate(block.ops):
            for direction, slots in (("reads", op.inputs), ("writes", op.outputs)):
                for slot, args in slots.items():
                    for name in args:
                        if name != EMPTY_VAR and block.visible_var(name) is None:
                            raise ProgramError(
                                f"{op_location(block.idx, op_idx, op.type)} {direction} var '{name}' "
                                f"(slot {slot}), which is not declared in block {block.idx} "
                                f"or its ancestors")


def check_op_against_definition(block, idx: int, op) -> None:
    """Slots hold what the op's definition allows (a required slot a var, a single slot at most one) and
    attributes have the declared kind."""
    problem = registry.slot_problem(op) or registry.attr_type_problem(op)
    if problem:
        raise ProgramError(f"{op_location(block.idx, idx, op.type)}: {problem}")


def check_definitions(program: Program) -> None:
    """Every op of every block against its definition (slots, attribute kinds): what the backward pass and
    the executor assume before they read an op."""
    for block in program.blocks:
        for idx, op in enumerate(block.ops):
            check_op_against_definition(block, idx, op)


def check_inputs(block, idx: int, op) -> None:
    """The op's inference on its declared inputs: attributes out of range and inputs that cannot go together
    fail as they do at compile time. Declared outputs are not compared (Paddle's can be stale), and inputs the
    rule cannot read are left to the kernel."""
    opdef = registry.get(op.type)
    if opdef is None or opdef.infer is None:
        return
    ctx = InferContext(op, block, idx)
    if any(shape is None for slot in op.inputs for shape in ctx.shapes(slot)):
        return
    try:
        opdef.infer(ctx)
    except ProgramError:
        raise
    except Exception:  # noqa: BLE001 - shapes the rule cannot read: the kernel sees the values
        return


def check_shapes(program: Program) -> None:
    """Check every op against its definition and run its inference; raise on the first problem."""
    for block in program.blocks:
        for idx, op in enumerate(block.ops):
            check_op_against_definition(block, idx, op)
            opdef = registry.get(op.type)
            if opdef is None or opdef.infer is None:
                continue
            ctx = InferContext(op, block, idx)
            if any(shape is None for slot in op.inputs for shape in ctx.shapes(slot)):
                continue
            try:
                results = opdef.infer(ctx)
            except ProgramError:
                raise
            except Exception as exc:  # noqa: BLE001 - inputs the rule cannot read: say so, naming the op
                ctx.fail(f"its shapes cannot be inferred from these inputs and attributes ({type(exc).__name__}: "
                         f"{exc})")
            for slot, result in results.items():
                results = result if isinstance(result, list) else [result]
                for name, (shape, _) in zip(op.output(slot), results):
                    var = block.find_var(name)
                    if var is None or var.shape is None or shape is None:
                        continue
                    if len(var.shape) != len(shape) or not all(map(dims_match, var.shape, shape)):
                        ctx.fail(f"output '{name}' is declared with shape {var.shape}, "
                                 f"but the inputs give {shape}")
