"""`gradc diff A B`: what differs between two programs, block by block; exit 0 when nothing does, 1 when
something does."""

from __future__ import annotations

import sys

import click

from ..diff import diff_programs, differences
from ..io import load
from .json_output import emit


@click.command()
@click.argument("first", type=click.Path())
@click.argument("second", type=click.Path())
@click.option("--ignore-attr", "ignore", multiple=True, metavar="NAME",
              help="Leave this op attribute out of the comparison; a glob such as 'op_*' works. Repeatable.")
@click.option("--all-attrs", is_flag=True,
              help="Compare Paddle's bookkeeping attributes too (op_callstack, op_namescope, op_device, "
                   "with_quant_attr, the oneDNN switches), which are left out by default.")
@click.option("--max-lines", type=click.IntRange(min=1), default=200, show_default=True,
              help="Print at most this many lines of differences (the count of the rest follows; not with --json, "
                   "which lists them all).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead: every difference with its "
              "block, kind (block, var, op), change (added, removed, changed), var or op indices and op type.")
def diff(first, second, ignore, all_attrs, max_lines, as_json):
    """Compare two programs structurally: per block, vars added, removed or changed (type, dtype, shape,
    flags) by name, and ops added, removed or changed (type, slots, attributes) aligned by their order.

    Exit codes: 0 the same; 1 they differ (nothing on stderr) or a program could not be read (one 'gradc:
    error:' line on stderr; with --json, nothing on stdout); 2 a usage error."""
    a, b = load(first, lazy=False), load(second, lazy=False)
    if as_json:
        found = differences(a, b, ignore, bookkeeping=all_attrs)
        emit({"first": str(first), "second": str(second), "same": not found, "ignored_attrs": list(ignore),
              "differences": [_fields(difference) for difference in found]})
        if found:
            sys.exit(1)
        return
    lines = diff_programs(a, b, ignore, bookkeeping=all_attrs)
    if not lines:
        click.echo(f"{first} and {second} are the same" + (f" (ignoring {', '.join(ignore)})" if ignore else ""))
        return
    for line in lines[:max_lines]:
        click.echo(line)
    if len(lines) > max_lines:
        click.echo(f"... {len(lines) - max_lines} more lines (--max-lines)")
    sys.exit(1)


def _fields(difference) -> dict:
    fields = difference._asdict()
    fields["message"] = fields.pop("line").strip()
    return fields
