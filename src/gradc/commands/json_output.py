"""The --json output of gradc run, check, verify and diff: one JSON document, one line, on stdout, printed only once
the command has all of it (an error leaves stdout empty); the schema is in docs/tools.md."""

from __future__ import annotations

import math

import click


def number(value):
    """A number JSON holds: a float that is NaN or infinite becomes the string "nan", "inf" or "-inf"."""
    if isinstance(value, complex):
        return [number(value.real), number(value.imag)]
    if isinstance(value, float) and not math.isfinite(value):   # strict JSON has no NaN or Infinity literals
        return str(value)
    return value


def problem(message: str, block: int | None = None, op: int | None = None, op_type: str | None = None,
            var: str | None = None) -> dict:
    """One problem a command found, where known: block index, op index in it, op type, var."""
    return {"block": block, "op": op, "op_type": op_type, "var": var, "message": message}


def emit(document: dict) -> None:
    import json  # here: a command without --json imports no json module (tests/test_cli.py counts the imports)
    click.echo(json.dumps(document, allow_nan=False))
