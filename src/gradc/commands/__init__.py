"""`gradc` commands that live outside cli.py, one module per topic, registered on the click group."""

from __future__ import annotations

import click


def register_commands(group: click.Group) -> None:
    from .diff import diff
    from .ops import ops
    from .show import show
    from .verify import verify
    from .view import view

    for command in (show, ops, view, diff, verify):
        group.add_command(command)
