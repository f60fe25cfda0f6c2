"""The names of the vars a control-flow double grad's replay declares (gradc.ops.control_flow_double): a new name is
looked up in a set of the names the program's blocks declare, not in every block. The set is gathered again only
when the program changed otherwise than through these functions (its revision moved: every change bumps it)."""

from __future__ import annotations

import weakref

from ..ir import Block, Program, VarDesc

# program -> (its revision when the set was last current, the names its blocks declare)
_DECLARED: weakref.WeakKeyDictionary[Program, tuple[int, set[str]]] = weakref.WeakKeyDictionary()


def declared_names(program: Program) -> set[str]:
    """The names any block of the program declares."""
    revision, names = _DECLARED.get(program, (-1, set()))
    if revision != program.revision:
        names = {name for block in program.blocks for name in block.vars}
        _DECLARED[program] = (program.revision, names)
    return names


def declare(block: Block, var: VarDesc) -> VarDesc:
    """``var`` added to ``block``, and to the declared names (its one change to the program)."""
    program = block.program
    names = declared_names(program)
    block.add_var(var)
    names.add(var.name)
    _DECLARED[program] = (program.revision, names)
    return var


def child_block(parent: Block) -> Block:
    """A new block of ``parent``'s program, under it: it declares nothing, so a current set of names stays current."""
    program = parent.program
    revision, names = _DECLARED.get(program, (-1, set()))
    block = program.append_block(parent.idx)
    if revision == program.revision - 1:   # current before: append_block bumped the revision once
        _DECLARED[program] = (program.revision, names)
    return block
