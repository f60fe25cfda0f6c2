"""`gradc diff A B`: what differs between two programs, block by block; exit 0 when nothing does, 1 when
something does."""

from __future__ import annotations

import sys

import click

from ..diff import diff_programs
from ..io import load


@click.command()
@click.argument("first", type=click.Path())
@click.argument("second", type=click.Path())
@click.option("--ignore-attr", "ignore", multiple=True, metavar="NAME",
              help="Leave this op attribute out of the comparison; a glob such as 'op_*' works. Repeatable.")
@click.option("--all-attrs", is_flag=True,
              help="Compare Paddle's bookkeeping attributes too (op_callstack, op_namescope, op_device, "
                   "with_quant_attr, the oneDNN switches), which are left out by default.")
@click.option("--max-lines", type=click.IntRange(min=1), default=200, show_default=True,
              help="Print at most this many lines of differences (the count of the rest follows).")
def diff(first, second, ignore, all_attrs, max_lines):
    """Compare two programs structurally: per block, vars added, removed or changed (type, dtype, shape,
    flags) by name, and ops added, removed or changed (type, slots, attributes) aligned by their order.
    Exit 0 when they are the same, 1 when they differ."""
    lines = diff_programs(load(first), load(second), ignore, bookkeeping=all_attrs)
    if not lines:
        click.echo(f"{first} and {second} are the same" + (f" (ignoring {', '.join(ignore)})" if ignore else ""))
        return
    for line in lines[:max_lines]:
        click.echo(line)
    if len(lines) > max_lines:
        click.echo(f"... {len(lines) - max_lines} more lines (--max-lines)")
    sys.exit(1)
