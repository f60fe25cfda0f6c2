"""Checks that a program is well formed, with errors that say where the problem is: structure (blocks),
declared vars, definitions and shapes (every registered inference agrees with the declared vars).

Each check is a generator of problems (one line each, naming block, op and var), so `gradc.verify` can
report every problem at once; the ``check_*`` functions raise ProgramError on the first, for the passes
that must stop there."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from . import registry
from .errors import ProgramError, op_location
from .ir import EMPTY_VAR, AttrType, Program, dtype_fits, dtype_name
from .ops.complex_inputs import complex_input_problem, declares_complex
from .ops.infer import InferContext
from .ops.pylayer import user_backward_blocks
from .shapes import shape_fits

MAX_NESTING = 64   # blocks inside blocks: far beyond real programs, and it bounds every recursive walk


def raise_first(problems: Iterable[str]) -> None:
    """Raise the first problem (the rest are not computed)."""
    problem = next(iter(problems), None)
    if problem is not None:
        raise ProgramError(problem)


def check_structure(program: Program, source: str = "program") -> None:
    raise_first(structure_problems(program, source))


def structure_problems(program: Program, source: str = "program") -> Iterator[str]:
    """Block indices, parent links (acyclic, at most MAX_NESTING deep) and sub-block attributes are
    consistent; every name is text without control characters. Linear in the program's size. A problem
    with the blocks themselves ends the walk: nothing after it could be read safely."""
    frame, depths = _frame(program, source)
    if frame:
        yield from frame
        return
    for name, _ in program.op_version_map or ():
        if _bad_name(name):
            yield f"{source}: the op version map names {name!r}, which is not printable text"
    for block in program.blocks:
        yield from _name_problems(block, source)
        for op_idx, op in enumerate(block.ops):
            if _BLOCK_KINDS.isdisjoint(op.attr_types.values()):   # most ops: no block attribute to check
                continue
            for name, kind in op.attr_types.items():
                if kind == AttrType.BLOCK and op.attrs[name] is None:
                    yield (f"{source}: {op_location(block.idx, op_idx, op.type)}: attribute '{name}' "
                           f"is a block reference with no block index")
            for name, sub in op.block_refs():
                yield from _sub_block_problems(program, block.idx, op_idx, op.type, name, sub, source, depths)


_BLOCK_KINDS = frozenset({AttrType.BLOCK, AttrType.BLOCKS})


def frame_problems(program: Program, source: str = "program") -> list[str]:
    """Problems with the blocks themselves (indices, parent links, nesting): after one, nothing else can be
    walked safely."""
    return _frame(program, source)[0]


def _frame(program: Program, source: str) -> tuple[list[str], list[int]]:
    """The frame's problems, and each block's nesting depth when there are none."""
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


def _name_problems(block, source: str) -> Iterator[str]:
    """Names are text a user can read in one line: not undecodable bytes, no control characters. Checked
    in bulk (one join per block); the slow search for the culprits runs only when something is wrong."""
    names = list(block.vars)
    texts = []   # text attribute values: they must be str
    for op in block.ops:
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
        yield from _bad_names(block, source)


def _bad_names(block, source: str) -> Iterator[str]:
    for name in block.vars:
        if _bad_name(name):
            yield f"{source}: block {block.idx} declares a var whose name {name!r} is not printable text"
    for op_idx, op in enumerate(block.ops):
        where = f"{source}: block {block.idx}, op {op_idx}"
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


def _sub_block_problems(program, block_idx, op_idx, op_type, attr, sub, source, depths) -> Iterator[str]:
    where = f"{source}: {op_location(block_idx, op_idx, op_type)}"
    if not 0 < sub < len(program.blocks):
        yield f"{where}: attribute '{attr}' names block {sub}, but the program has {len(program.blocks)} blocks"
        return
    ancestor = block_idx if depths[sub] <= depths[block_idx] else -1   # only an ancestor can close a cycle
    while ancestor != -1:
        if ancestor == sub:
            yield f"{where}: attribute '{attr}' names block {sub}, which contains this op: a cycle"
            return
        ancestor = program.blocks[ancestor].parent_idx


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
                                and block.visible_var(name) is None:
                            yield (f"{op_location(block.idx, op_idx, op.type)} {direction} var '{name}' "
                                   f"({kind} {where}), which is not declared in block {block.idx} or its ancestors")


def _definition_problems(block, idx: int, op) -> Iterator[str]:
    """Slots hold what the op's definition allows (a required slot a var, a single slot at most one) and
    attributes have the declared kind."""
    for problem in (registry.slot_problem(op), registry.attr_type_problem(op)):
        if problem:
            yield f"{op_location(block.idx, idx, op.type)}: {problem}"


def check_definitions(program: Program) -> None:
    """Every op of every block against its definition (slots, attribute kinds): what the backward pass and
    the executor assume before they read an op."""
    raise_first(definition_problems(program))


def definition_problems(program: Program) -> Iterator[str]:
    for block in program.blocks:
        for idx, op in enumerate(block.ops):
            yield from _definition_problems(block, idx, op)


def check_inputs(block, idx: int, op) -> None:
    """The op's inference on its declared inputs: attributes out of range and inputs that cannot go together
    fail as they do at compile time. Declared outputs are not compared (Paddle's can be stale), and inputs the
    rule cannot read are left to the kernel."""
    try:
        _inferred(block, idx, op)
    except ProgramError:
        raise
    except Exception:  # noqa: BLE001 - shapes the rule cannot read: the kernel sees the values
        return


def check_complex_inputs(block, idx: int, op) -> None:
    """An op whose kernel has no complex form fails on a complex input var, as its inference fails on a bad one."""
    if problem := complex_input_problem(block, op):
        InferContext(op, block, idx).fail(problem)


def _inferred(block, idx: int, op) -> tuple[InferContext, dict] | None:
    """The op's inference context and results, or None without a rule, with an input shape unknown, or with an
    attribute known only at run time (a var's value)."""
    opdef = registry.get(op.type)
    if opdef is None or opdef.infer is None or op.var_attrs or not _input_shapes_known(block, op):
        return None
    ctx = InferContext(op, block, idx)
    return ctx, opdef.infer(ctx)


def _input_shapes_known(block, op) -> bool:
    own = block.vars   # most names are the block's own: a dict lookup before the walk up the ancestors
    for args in op.inputs.values():
        for name in args:
            var = own.get(name) or block.find_var(name)
            if var is None or var.shape is None:
                return False
    return True


def check_shapes(program: Program) -> None:
    """Check every op against its definition and run its inference; raise on the first problem."""
    raise_first(shape_problems(program))


def shape_problems(program: Program) -> Iterator[str]:
    """Each op's definition problems, then its shapes and dtypes by inference (not for an op whose definition
    is broken)."""
    slot_problem, attr_type_problem = registry.slot_problem, registry.attr_type_problem
    for block in program.blocks:
        complex_values = declares_complex(block)   # one sweep of the vars: most programs skip the op checks
        for idx, op in enumerate(block.ops):
            if slot_problem(op) or attr_type_problem(op):
                yield from _definition_problems(block, idx, op)
                continue
            try:
                _check_inference(block, idx, op)
                if complex_values:
                    check_complex_inputs(block, idx, op)
            except ProgramError as exc:
                yield str(exc)


def _check_inference(block, idx: int, op) -> None:
    try:
        inferred = _inferred(block, idx, op)
    except ProgramError:
        raise
    except Exception as exc:  # noqa: BLE001 - inputs the rule cannot read: say so, naming the op
        InferContext(op, block, idx).fail(f"its shapes cannot be inferred from these inputs and attributes "
                                          f"({type(exc).__name__}: {exc})")
    if inferred is None:
        return
    ctx, results = inferred
    own, outputs = block.vars, op.outputs
    for slot, result in results.items():
        for name, (shape, dtype) in zip(outputs.get(slot, ()), result if isinstance(result, list) else [result]):
            var = own.get(name) or block.find_var(name)
            if var is None:
                continue
            declared = var.shape   # equal lists (most outputs) need no walk over the dims
            if declared is not None and shape is not None and declared != shape and not shape_fits(
                    declared, shape, block.program.version, op.type == "fill_constant"):
                ctx.fail(f"output '{name}' is declared with shape {declared}, but the inputs give {shape}")
            if var.dtype is not None and dtype is not None and not dtype_fits(var.dtype, dtype):
                ctx.fail(f"output '{name}' is declared {dtype_name(var.dtype)}, but the inputs give "
                         f"{dtype_name(dtype)}")
