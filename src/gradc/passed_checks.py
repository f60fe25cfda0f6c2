"""Whole-program checks a program has passed, by its state when it passed them, so that a later step skips a check
the program passed with no change since: load checks the structure, so the verify pass after it need not; the verify
pass checks every op against its definition, so the backward after it need not.

The state is Program.revision, which the IR's mutators and every editing pass move (code that edits the lists and
dicts directly calls mark_changed, which the executor's checks rely on too), with the count of edits made through
OpDesc's own mutators (set_attr, rename_reads: an op knows no program, so any op's edit counts) and each block's
counts of ops and vars, which also catch ops and vars added or dropped unannounced. A copy of a program (clone,
deepcopy, pickle) is another program: it passed nothing."""

from __future__ import annotations

import weakref
from contextlib import contextmanager

from .ir import Program
from .ir.descs import op_edits

STRUCTURE = "structure"       # gradc.verify.check_structure
DEFINITIONS = "definitions"   # every op against its definition: gradc.verify_shapes.check_definitions

# program -> {check: the program's state when it passed it}
_PASSED: weakref.WeakKeyDictionary[Program, dict[str, tuple]] = weakref.WeakKeyDictionary()


def _state(program: Program) -> tuple:
    return program.revision, op_edits(), [block.sizes() for block in program.blocks]


def record(program: Program, check: str) -> None:
    """``program``, as it is now, passed ``check``."""
    _PASSED.setdefault(program, {})[check] = _state(program)


def passed(program: Program, check: str) -> bool:
    """Whether ``program`` passed ``check`` and has not changed since."""
    checks = _PASSED.get(program)
    return checks is not None and checks.get(check) == _state(program)


@contextmanager
def kept(program: Program | None):
    """A change to how ``program`` is held, not to what it says (a loaded block's contents read from its bytes): the
    checks it had passed stay passed. None: a program already dropped, which keeps nothing."""
    if program is None:
        yield
        return
    state = _state(program)
    held = [check for check, passed_in in _PASSED.get(program, {}).items() if passed_in == state]
    yield
    for check in held:
        record(program, check)
