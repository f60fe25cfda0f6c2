"""When each var of a block dies: the plan frees a value after its last reader, and keeps only a shape
stub of a value whose later readers need no more than its shape and dtype (Paddle's no-need-buffer
inputs: elementwise_add_grad reads X only to know how to sum dOut back), so the buffer goes early."""

from __future__ import annotations

import numpy as np

from ..ir import EMPTY_VAR, Block, OpDesc, Program
from .kernels import SHAPE_ONLY


def referenced_names(program: Program, op: OpDesc) -> set[str]:
    """Names an op touches, including everything its sub-blocks (recursively) touch."""
    names = set(op.input_names()) | set(op.output_names())
    for _, sub in op.block_refs():
        for inner in program.blocks[sub].ops:
            names |= referenced_names(program, inner)
    return names


def deaths(block: Block, keep: frozenset[str] | None) -> tuple[list[list[str]], list[list[str]]]:
    """Per op: the vars to drop after it, and those to shrink to a shape stub after it. Nothing dies
    when ``keep`` is None (a sub-block: grad blocks read its values later); fetched (``keep``) and
    persistable vars never do."""
    frees: list[list[str]] = [[] for _ in block.ops]
    shrinks: list[list[str]] = [[] for _ in block.ops]
    if keep is None:
        return frees, shrinks
    last_use: dict[str, int] = {}
    last_value: dict[str, int] = {}   # the last op that reads or writes the value itself
    for idx, op in enumerate(block.ops):
        shape_names = _shape_only_names(op)
        # most ops run no block: their own names, repeats and all, with no sets built
        names = referenced_names(block.program, op) if op.block_refs() else op.input_names() + op.output_names()
        for name in names:
            last_use[name] = idx
            if name not in shape_names:
                last_value[name] = idx
    own = block.vars
    for name, idx in last_use.items():
        var = own.get(name) or block.find_var(name)
        if name in keep or name == EMPTY_VAR or (var is not None and var.persistable):
            continue
        frees[idx].append(name)
        if -1 < last_value.get(name, -1) < idx:   # a value made in this block, then only its shape is read
            shrinks[last_value[name]].append(name)
    return [sorted(f) for f in frees], [sorted(s) for s in shrinks]


_NONE: frozenset[str] = frozenset()


def _shape_only_names(op: OpDesc) -> frozenset[str] | set[str]:
    """The vars the op's kernel reads for their shape and dtype only (not also through another slot)."""
    slots = SHAPE_ONLY.get(op.type)
    if not slots:
        return _NONE
    names = {name for slot in slots for name in op.inputs.get(slot, ())}
    names.difference_update(name for slot, args in op.inputs.items() if slot not in slots for name in args)
    names.difference_update(op.output_names())
    return names


_ZEROS = bytes(16)   # one element of any dtype
_STUBS: dict[tuple, np.ndarray] = {}   # (shape, dtype) -> its stub: read-only, so one serves every value alike


def shape_stub(array: np.ndarray) -> np.ndarray:
    """A read-only array of ``array``'s shape and dtype that holds no memory (every element is one zero)."""
    key = (array.shape, array.dtype)
    stub = _STUBS.get(key)
    if stub is None:
        if len(_STUBS) >= 1024:   # many shapes (a program fed many batch sizes): start over
            _STUBS.clear()
        stub = _STUBS[key] = np.ndarray(array.shape, array.dtype, buffer=_ZEROS, strides=(0,) * array.ndim)
    return stub
