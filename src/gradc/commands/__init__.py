"""`gradc` commands that live outside cli.py, one module per topic. The group imports a command's module only
when that command runs (or help lists it), so `gradc compile` does not import the executor or numpy."""

from __future__ import annotations

import importlib

import click

# command -> (module in this package, the click command's name in it)
LAZY_COMMANDS = {
    "check": ("run", "check"), "diff": ("diff", "diff"), "export": ("train", "export_command"),
    "ops": ("ops", "ops"), "run": ("run", "run"), "show": ("show", "show"), "train": ("train", "train"),
    "verify": ("verify", "verify"), "view": ("view", "view"),
}


class LazyGroup(click.Group):
    """A click group whose commands in LAZY_COMMANDS are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.commands or name not in LAZY_COMMANDS:
            return super().get_command(ctx, name)
        module, attr = LAZY_COMMANDS[name]
        self.add_command(getattr(importlib.import_module(f"{__name__}.{module}"), attr), name)
        return self.commands[name]
