"""Checks that a program is well formed, with errors that say where the problem is: structure (blocks),
declared vars, and shapes (every registered inference agrees with the declared vars)."""

from __future__ import annotations

from . import registry
from .errors import ProgramError, op_location
from .ir import EMPTY_VAR, Program
from .ops.infer import InferContext
from .shapes import dims_match


def check_structure(program: Program, source: str = "program") -> None:
    """Block indices, parent links and sub-block attributes are consistent and acyclic."""
    count = len(program.blocks)
    for position, block in enumerate(program.blocks):
        if block.idx != position:
            raise ProgramError(f"{source}: block at position {position} says its idx is {block.idx}")
        if position == 0 and block.parent_idx != -1:
            raise ProgramError(f"{source}: block 0 must have parent_idx -1, not {block.parent_idx}")
        if position > 0 and not 0 <= block.parent_idx < count:
            raise ProgramError(f"{source}: block {position} has parent_idx {block.parent_idx}, "
                               f"but the program has {count} blocks")
    for block in program.blocks:
        seen = {block.idx}
        parent = block.parent_idx
        while parent != -1:
            if parent in seen:
                raise ProgramError(f"{source}: block {block.idx}: cycle in parent links through block {parent}")
            seen.add(parent)
            parent = program.blocks[parent].parent_idx
    for block in program.blocks:
        for op_idx, op in enumerate(block.ops):
            for name, sub in op.block_refs():
                _check_sub_block(program, block.idx, op_idx, op.type, name, sub, source)


def _check_sub_block(program, block_idx, op_idx, op_type, attr, sub, source) -> None:
    where = f"{source}: {op_location(block_idx, op_idx, op_type)}"
    if not 0 < sub < len(program.blocks):
        raise ProgramError(f"{where}: attribute '{attr}' names block {sub}, "
                           f"but the program has {len(program.blocks)} blocks")
    ancestor = block_idx
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
                        if name != EMPTY_VAR and block.find_var(name) is None:
                            raise ProgramError(
                                f"{op_location(block.idx, op_idx, op.type)} {direction} var '{name}' "
                                f"(slot {slot}), which is not declared in block {block.idx} "
                                f"or its ancestors")


def check_shapes(program: Program) -> None:
    """Run every registered inference over the program; raise on the first mismatch."""
    for block in program.blocks:
        for idx, op in enumerate(block.ops):
            opdef = registry.get(op.type)
            if opdef is None or opdef.infer is None:
                continue
            ctx = InferContext(op, block, idx)
            if any(shape is None for slot in op.inputs for shape in ctx.shapes(slot)):
                continue
            for slot, result in opdef.infer(ctx).items():
                results = result if isinstance(result, list) else [result]
                for name, (shape, _) in zip(op.output(slot), results):
                    var = block.find_var(name)
                    if var is None or var.shape is None or shape is None:
                        continue
                    if len(var.shape) != len(shape) or not all(map(dims_match, var.shape, shape)):
                        ctx.fail(f"output '{name}' is declared with shape {var.shape}, "
                                 f"but the inputs give {shape}")
