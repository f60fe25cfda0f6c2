"""`gradc view`: the interactive program viewer, one self-contained HTML file."""

from __future__ import annotations

from pathlib import Path

import click

from ..io import check_writable, is_stdout, load, write_atomic
from ..viz.html import program_html


@click.command()
@click.argument("program", type=click.Path())
@click.option("-o", "--output", type=click.Path(),
              help="The HTML file to write (default: the program's path with .html, beside it).")
@click.option("--feed", type=click.Path(), help="Inputs (.npz): run block 0 once and show each var's value statistics.")
@click.option("--params", type=click.Path(), multiple=True,
              help="Parameters for that run: an .npz, Paddle's .pdiparams or .pdparams. Repeatable.")
@click.option("--startup", "startups", multiple=True, type=click.Path(),
              help="Initialiser programs to run before that run, in order. Repeatable.")
@click.option("--title", help="The page title (default: the program's path).")
def view(program, output, feed, params, startups, title):
    """Write an interactive picture of a program: ops top to bottom styled by role, each grad op linked to
    the forward op it differentiates, collapsible sub-blocks, click panels, search. Open it in a browser."""
    output = output or str(Path(program).with_suffix(".html"))
    check_writable(output)
    prog = load(program, lazy=False)
    stats = None
    if feed or params or startups:   # a run: numpy and the executor are imported only for one
        from ..io.arrays import read_npz
        from ..training.params import read_files, require_values
        from ..viz.stats import value_stats
        from .run_feeds import model_inputs, naming_feed

        def check(scope, fed):
            require_values(prog, scope, fed, params, program)
        with naming_feed(feed):
            given = read_files(params, prog)
            fed = model_inputs(prog, read_npz(feed, "feed"), feed) if feed else {}   # a test set's labels left out
            stats = value_stats(prog, fed, given, [load(path, lazy=False) for path in startups], check)
    page = program_html(prog, title or str(program), stats)
    write_atomic(output, page.encode("utf-8"))
    opening = f"; open {Path(output).resolve().as_uri()} in a browser" if Path(output).is_file() else ""   # not a pipe
    click.echo(f"wrote {output} ({prog.num_ops()} ops, {len(page) // 1024} KiB){opening}", err=is_stdout(output))
