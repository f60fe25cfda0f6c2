"""`gradc verify`: every problem of a program, one line each (or one JSON object); exit 1 when there is any."""

from __future__ import annotations

import sys

import click

from .. import registry
from ..errors import GradcError
from ..io import load
from ..verification import problem_fields
from ..verification import verify as verify_program
from .json_output import emit


@click.command()
@click.argument("programs", nargs=-1, required=True, type=click.Path())
@click.option("-q", "--quiet", is_flag=True, help="Print only the problems, not the summary of a good program.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead, once every program is "
              "checked: per program its problems, each with block, op index, op type and var where known.")
def verify(programs, quiet, as_json):
    """Check programs: declared vars written before they are read, slots and attributes as each op's
    definition says, shapes and dtypes as inference gives them, no block that no op runs, one final
    writer per gradient. Lists every problem found.

    Exit codes: 0 no problem; 1 problems found (with --json, its object lists them and stderr is empty) or a
    program could not be read (one 'gradc: error:' line on stderr; with --json, nothing on stdout); 2 a usage
    error."""
    if as_json:
        reports = [_report(path) for path in programs]   # every file read before a byte is printed
        emit({"ok": all(report["ok"] for report in reports), "programs": reports})
        if not all(report["ok"] for report in reports):
            sys.exit(1)
        return
    failed = []
    for path in programs:
        program, problems, unknown = _checked(path)
        for problem in problems:
            click.echo(f"{path}: {problem}" if not problem.startswith(str(path)) else problem)
        if problems:
            failed.append(f"{path} ({len(problems)})")
        elif not quiet:
            note = f"; not checked, op types gradc does not know: {', '.join(unknown)}" if unknown else ""
            click.echo(f"{path}: ok ({len(program.blocks)} block(s), {program.num_ops()} ops{note})")
    if failed:
        raise GradcError(f"problems found in {', '.join(failed)}")


def _checked(path: str) -> tuple:
    """The program, its problems, and the op types gradc has no definition of (a Paddle custom op, say): verify checks
    neither their slots nor their shapes, and says so rather than call them ok."""
    program = load(path, lazy=False)
    unknown = sorted({op.type for block in program.blocks for op in block.ops if registry.get(op.type) is None})
    return program, verify_program(program, str(path)), unknown


def _report(path: str) -> dict:
    program, problems, unknown = _checked(path)
    return {"file": str(path), "ok": not problems, "blocks": len(program.blocks), "ops": program.num_ops(),
            "unknown_op_types": unknown, "problems": [problem_fields(problem, str(path)) for problem in problems]}
