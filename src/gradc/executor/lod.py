"""LoD (Paddle's level of detail): sequences packed in one [total_rows, ...] tensor, told apart by offsets.

A LoD is a tuple of levels, each a tuple of offsets: ((0, 2, 5),) holds two sequences, rows 0-1 and 2-4; a
nested level's offsets index the sequences of the level below it. A var's value stays a plain array in its
scope (kernels that ignore LoD see nothing new); its LoD lives beside it, in the scope's ``lods`` table.

Feeding: a ``LoDTensor(array, lod)`` (or ``LoDTensor.from_lengths(array, [[2, 3]])``, Paddle's
recursive_seq_lens) in a feed dict. Fetching: ``Executor.run(..., return_lod=True)`` gives a LoDTensor for
each fetched var that has a LoD (an array for the others). In an .npz (``gradc run --feed``, ``--out``), level k
of var x's LoD is the int array ``x@LOD<k>`` beside ``x`` (``with_lods`` and ``lod_arrays``).

Propagation, as Paddle's ShareLoD, planned once per block and run only where LoD can occur (a var declared
with lod_level > 0 or an op that makes LoD, in the block or one it runs, or a LoD in the scope): an op whose
kernel does not set LoD itself gives each output the LoD of its first input that has one and the same dim 0 (an
op that runs blocks: none, its blocks' ops set it); a grad op gives ``X@GRAD`` the LoD of X. A LoD is kept in the
scope its value lands in (Scope.home).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ExecutionError
from ..ir import EMPTY_VAR, Block, OpDesc

LoD = tuple[tuple[int, ...], ...]

# op types whose kernels set their outputs' LoD themselves (ctx.set_lod); registered by their kernel modules.
# A saved inference program's feed op rewrites a fed var from the holder list: the LoD fed with it stays.
SETS_LOD: set[str] = {"feed"}
# op types whose kernels set their outputs' LoD from LoD already in the scope (read_from_array: the LoD its slot was
# written with): run without ShareLoD like SETS_LOD, but they make no LoD, so a block of them runs the plain plan
PASSES_LOD: set[str] = set()


@dataclass(frozen=True)
class LoDTensor:
    """An array with its LoD, for feeding (and fetching with return_lod=True)."""

    array: np.ndarray
    lod: LoD

    def __init__(self, array, lod: Sequence[Sequence[int]]):
        object.__setattr__(self, "array", np.asarray(array))
        object.__setattr__(self, "lod", tuple(level_offsets(level, f"level {k} of the LoD")
                                              for k, level in enumerate(lod)))

    @classmethod
    def from_lengths(cls, array, lengths: Sequence[Sequence[int]]) -> LoDTensor:
        """From sequence lengths per level (Paddle's recursive_seq_lens): [[2, 3]] is the LoD ((0, 2, 5),)."""
        return cls(array, [tuple(np.concatenate([[0], np.cumsum(level, dtype=np.int64)])) for level in lengths])

    @property
    def lengths(self) -> list[list[int]]:
        return [list(np.diff(level)) for level in self.lod]


def level_offsets(level, what: str, error: type[Exception] = ExecutionError) -> tuple[int, ...]:
    """One LoD level as a tuple of ints; ``error`` naming ``what`` unless it is a flat list of integers (a float
    offset would be truncated, a 2-D array flattened: neither is a LoD anyone meant). Kernels raise ValueError."""
    array = np.asarray(level)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise error(f"{what} must be a flat list of integer offsets, got {array.dtype}{list(array.shape)}")
    return tuple(array.tolist())


LOD_SUFFIX = "@LOD"


def with_lods(arrays: Mapping[str, np.ndarray]) -> dict:
    """An .npz's arrays as a feed: ``x`` with its levels ``x@LOD0``, ``x@LOD1``, ... becomes a LoDTensor."""
    levels: dict[str, dict[int, np.ndarray]] = {}
    for name, array in arrays.items():
        base, _, level = name.rpartition(LOD_SUFFIX)
        if base and level.isdigit():
            levels.setdefault(base, {})[int(level)] = array
    stray = sorted(set(levels) - set(arrays))
    if stray:
        raise ExecutionError(f"LoD arrays for {stray}, which the feed has no array of")
    for base, found in levels.items():
        if sorted(found) != list(range(len(found))):
            raise ExecutionError(f"the LoD of '{base}' has levels {sorted(found)}: name them {base}@LOD0, "
                                 f"{base}@LOD1, ... with none missing")
    feed = {name: array for name, array in arrays.items() if name not in _lod_names(levels)}
    for base, found in levels.items():
        feed[base] = LoDTensor(feed[base], [level_offsets(found[k], f"'{base}{LOD_SUFFIX}{k}'")
                                            for k in range(len(found))])
    return feed


def _lod_names(levels: dict) -> set[str]:
    return {f"{base}{LOD_SUFFIX}{k}" for base, found in levels.items() for k in found}


def lod_arrays(name: str, value) -> dict[str, np.ndarray]:
    """A fetched value for an .npz: ``name`` -> its array, and for a LoDTensor each level as ``name@LOD<k>``."""
    if not isinstance(value, LoDTensor):
        return {name: np.asarray(value)}
    return {name: value.array, **{f"{name}{LOD_SUFFIX}{k}": np.asarray(level, np.int64)
                                  for k, level in enumerate(value.lod)}}


def lod_problem(lod: LoD, rows: int) -> str | None:
    """What is wrong with ``lod`` as the LoD of a tensor of ``rows`` rows, or None."""
    for i, level in enumerate(lod):
        if len(level) < 1 or level[0] != 0:
            return f"level {i} of LoD {list(map(list, lod))} must start at offset 0"
        if any(b < a for a, b in zip(level, level[1:])):
            return f"level {i} of LoD {list(map(list, lod))} has decreasing offsets"
        below = rows if i == len(lod) - 1 else len(lod[i + 1]) - 1
        what = f"dim 0 ({rows})" if i == len(lod) - 1 else f"the {below} sequences of level {i + 1}"
        if level[-1] != below:
            return f"level {i} of LoD {list(map(list, lod))} ends at {level[-1]}, not at {what}"
    return None


def checked_lod(lod: LoD, rows: int, what: str) -> LoD:
    """``lod``; ExecutionError naming ``what`` unless it fits a tensor of ``rows`` rows."""
    problem = lod_problem(lod, rows)
    if problem:
        raise ExecutionError(f"{what}: {problem}")
    return lod


def lod_of(scope, name: str) -> LoD | None:
    """The LoD of the var ``name`` as seen from ``scope`` (its own table, then its parents'), or None."""
    while scope is not None:
        lods = scope.lods
        if lods is not None and name in lods:
            return lods[name]
        scope = scope.parent
    return None


def set_lod(scope, name: str, lod: LoD | None, run_scope=None) -> None:
    """Record (None: clear) the LoD of the var ``name`` beside its value, in the scope a write from ``scope``
    lands in (an outer var a sub-block writes keeps its LoD after the block), but no higher than the run's own
    scope, the child of ``run_scope`` (Executor.run's caller's): no LoD outlives a run (nor slows the next)."""
    home = scope.home(name)
    while scope is not home and scope.parent is not run_scope:
        scope = scope.parent
    if lod:
        if scope.lods is None:
            scope.lods = {}
        scope.lods[name] = lod
    elif scope.lods is not None:
        scope.lods.pop(name, None)


def lift_lods(k, inner, names) -> None:
    """Give ``names`` in the kernel's scope the LoD they have in ``inner``, the scope a sub-block wrote them in."""
    if has_lod(inner):
        for name in names:
            set_lod(k.scope, name, lod_of(inner, name), k.run_scope)


def has_lod(scope) -> bool:
    """Whether ``scope`` or a scope above it holds any LoD."""
    while scope is not None:
        if scope.lods:
            return True
        scope = scope.parent
    return False


def declares_lod(block: Block) -> bool:
    """Whether the block can make LoD on its own: a var declared with lod_level > 0 or an op that sets LoD, in it
    or in a block its ops run (a sub-block's LoD reaches the block that runs it)."""
    program, seen, todo = block.program, {block.idx}, [block]
    while todo:
        block = todo.pop()
        if any((var.lod_level or 0) > 0 for var in block.vars.values()) or any(op.type in SETS_LOD
                                                                                for op in block.ops):
            return True
        for idx in {idx for op in block.ops for idx in program.blocks_run_by(op)} - seen:
            seen.add(idx)
            todo.append(program.blocks[idx])
    return False


def sharing(kernel: Callable, op: OpDesc) -> Callable:
    """``kernel`` followed by Paddle's ShareLoD onto the op's outputs (the kernel itself where it sets LoD)."""
    if op.type in SETS_LOD or op.type in PASSES_LOD:
        return kernel
    inputs = tuple(name for args in op.inputs.values() for name in args if name != EMPTY_VAR)
    # a grad gets its var's LoD; another output, its inputs' first, unless the op runs blocks: their ops set the
    # LoD of what they write (control flow lifts it, lift_lods)
    runs_blocks = bool(op.block_refs())
    targets = []   # (slot, position, name, the vars whose LoD it may take)
    for slot, args in op.outputs.items():
        for i, name in enumerate(args):
            var = grad_of(name)
            if name != EMPTY_VAR and (var is not None or not runs_blocks):
                targets.append((slot, i, name, inputs if var is None else (var,)))
    if not targets or not inputs:
        return kernel

    def run(ctx):
        results = kernel(ctx)
        if results:
            _share(ctx.scope, ctx.run_scope, results, targets)
        return results

    return run


def grad_of(name: str) -> str | None:
    """The var ``name`` is the grad of (v@GRAD, v@GRAD@RENAME@block0@1, v@GRAD@2: v), or None: not a grad (a grad
    maker's temporary, v@GRAD@TMP@0@3, may have other rows than v)."""
    at = name.rfind("@GRAD")
    return None if at < 0 or "@TMP@" in name[at:] else name[:at]


def _share(scope, run_scope, results: dict, targets: tuple) -> None:
    for slot, i, name, sources in targets:
        value = results.get(slot)
        if isinstance(value, list):
            value = value[i] if i < len(value) else None
        if not isinstance(value, np.ndarray) or value.ndim == 0:
            continue
        set_lod(scope, name, _first_lod(scope, sources, value.shape[0]), run_scope)


def _first_lod(scope, sources: tuple[str, ...], rows: int) -> LoD | None:
    """The LoD of the first source that has one and ``rows`` rows (or no value any more: a grad's var, freed before
    its grad is made, had its grad's rows)."""
    for source in sources:
        lod = lod_of(scope, source)
        if lod is not None:
            value = scope.find(source)
            if not isinstance(value, np.ndarray) or (value.ndim > 0 and value.shape[0] == rows):
                return lod
    return None
