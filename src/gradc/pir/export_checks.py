"""What gradc's PIR export refuses before it writes anything: ops its table has no row for, and attributes of a
wire type the op's definition does not take."""

from __future__ import annotations

from ..errors import ProgramError, op_location
from ..ir import Program
from ..opdef import attr_type_problem
from .export_special import SPECIAL_EXPORTS
from .table.rows import EXPORTS


def check_exportable(program: Program) -> None:
    """One error listing every op the table cannot write; else the first attribute of a type no export reads."""
    missing: dict[str, str] = {}
    for block in program.blocks:
        for index, op in enumerate(block.ops):
            if problem := attr_type_problem(op):
                raise ProgramError(f"cannot write as PIR: {op_location(block.idx, index, op.type)}: {problem}")
            if op.type not in EXPORTS and op.type not in SPECIAL_EXPORTS:
                missing.setdefault(op.type, op_location(block.idx, index, op.type))
    if missing:
        listing = "; ".join(f"{t} (first at {where})" for t, where in sorted(missing.items()))
        raise ProgramError(f"cannot write as PIR: {len(missing)} op type(s) gradc's PIR table has no export for: "
                           f"{listing}")
