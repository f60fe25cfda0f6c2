"""The --json output of gradc run, check, verify, diff, compile and precision: one JSON document, one line, on
stdout, printed only once the command has all of it (an error leaves stdout empty); gradc train's is a stream of
them (train_report.py). The schema is in docs/tools.md."""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager

import click

from ..errors import GradcNotice, GradcWarning


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


@contextmanager
def recorded_warnings():
    """gradc's warnings and notes while the block runs, as {"kind": "warning" | "note", "message"} records in the
    list it yields; each is still shown on stderr too, as without --json."""
    records, show = [], warnings.showwarning

    def record(message, category, *args, **kwargs):
        if issubclass(category, GradcWarning):
            kind = "note" if issubclass(category, GradcNotice) else "warning"
            records.append({"kind": kind, "message": " ".join(str(message).split())})
        show(message, category, *args, **kwargs)

    warnings.showwarning = record
    try:
        yield records
    finally:
        warnings.showwarning = show


@contextmanager
def held_notes():
    """gradc's notes while the block runs, shown once it ends without an error: a run that fails says one line, its
    error (a note that a feed's size differs from the declared one, then a kernel's error about that size, would be
    two)."""
    held, show = [], warnings.showwarning

    def hold(message, category, *args, **kwargs):
        if issubclass(category, GradcNotice):
            held.append((message, category, args, kwargs))
        else:
            show(message, category, *args, **kwargs)

    warnings.showwarning = hold
    try:
        yield
    finally:
        warnings.showwarning = show
    for message, category, args, kwargs in held:
        show(message, category, *args, **kwargs)
