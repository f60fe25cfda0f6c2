"""``gradc.verify(program)``: every problem found in a program, not only the first (`gradc verify`).

Structure, declared vars, each op against its definition, shapes and dtypes by inference, blocks no op
runs, reads before writes, and gradients written twice without a sum. A broken block structure stops the
walk after the structure checks: nothing else could be read safely."""

from __future__ import annotations

import re

from .ir import Program
from .verify import frame_problems, structure_problems, var_problems
from .verify_flow import grad_writer_problems, unreachable_block_problems, unwritten_read_problems
from .verify_shapes import shape_problems


def verify(program: Program, source: str = "program") -> list[str]:
    """The problems of ``program``, one line each naming block, op and var; empty when it is well formed."""
    problems = list(structure_problems(program, source))
    if frame_problems(program, source):
        return problems
    for check in (var_problems, shape_problems,   # shape_problems checks each op against its definition first
                  unreachable_block_problems, unwritten_read_problems, grad_writer_problems):
        problems.extend(check(program))
    return problems



_OP_AT = re.compile(r"block (\d+), op (\d+) \(([^)]*)\)")   # errors.op_location, which every op's problem names
_BLOCK_AT = re.compile(r"\bblock (\d+)\b")
_VAR = re.compile(r"\b(?:var|output|writes) '([^']*)'")


def problem_fields(problem: str, source: str = "program") -> dict:
    """A problem line of ``verify`` as fields: block, op (its index), op_type, var (each None where the line names
    none) and the message without the ``source`` in front (`gradc verify --json`)."""
    message = problem.removeprefix(f"{source}: ")
    at, block, var = _OP_AT.search(message), _BLOCK_AT.search(message), _VAR.search(message)
    return {"block": int(at[1]) if at else int(block[1]) if block else None, "op": int(at[2]) if at else None,
            "op_type": at[3] if at else None, "var": var[1] if var else None, "message": message}
