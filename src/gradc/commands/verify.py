"""`gradc verify`: every problem of a program, one line each; exit 1 when there is any."""

from __future__ import annotations

import click

from ..errors import GradcError
from ..io import load
from ..verification import verify as verify_program


@click.command()
@click.argument("programs", nargs=-1, required=True, type=click.Path())
@click.option("-q", "--quiet", is_flag=True, help="Print only the problems, not the summary of a good program.")
def verify(programs, quiet):
    """Check programs: declared vars written before they are read, slots and attributes as each op's
    definition says, shapes and dtypes as inference gives them, no block that no op runs, one final
    writer per gradient. Lists every problem found; exit 1 when there is any."""
    failed = []
    for path in programs:
        program = load(path)
        problems = verify_program(program, str(path))
        for problem in problems:
            click.echo(f"{path}: {problem}" if not problem.startswith(str(path)) else problem)
        if problems:
            failed.append(f"{path} ({len(problems)})")
        elif not quiet:
            click.echo(f"{path}: ok ({len(program.blocks)} block(s), {program.num_ops()} ops)")
    if failed:
        raise GradcError(f"problems found in {', '.join(failed)}")
