"""`gradc` commands that live outside cli.py, one module per topic. The group imports a command's module only
when that command runs, so `gradc compile` does not import the executor or numpy, the other commands not the
compiler's passes, and `gradc --help` and the shell's completion of a command name list each one by the help line
kept here, importing none."""

from __future__ import annotations

import importlib
from typing import NamedTuple

import click
from click.shell_completion import CompletionItem

from ..errors import closest


class LazyCommand(NamedTuple):
    module: str      # in this package
    attr: str        # the click command's name in it
    help_line: str   # its line in `gradc --help` (the command's short_help once imported)


LAZY_COMMANDS = {
    "compile": LazyCommand("compile", "compile", "Append the backward (training) ops of a forward program."),
    "check": LazyCommand("check", "check", "Check compiled gradients against float64 central differences."),
    "diff": LazyCommand("diff", "diff", "Compare two programs' vars and ops; exit 1 when they differ."),
    "evaluate": LazyCommand("evaluate", "evaluate", "Evaluate a model over a data set: loss and accuracy."),
    "export": LazyCommand("export", "export_command", "Export a program for inference, as save_inference_model."),
    "info": LazyCommand("info", "info", "Summarise a program: inputs, outputs, parameters, loss."),
    "ops": LazyCommand("ops", "ops", "List the registered op types, or describe one."),
    "precision": LazyCommand("run", "precision", "Find the ops where a float32 program loses precision."),
    "run": LazyCommand("run", "run", "Run a program with the numpy executor."),
    "run-ranks": LazyCommand("ranks", "run_ranks_command", "Run every rank's program of a collective job together."),
    "show": LazyCommand("show", "show", "Print a listing, draw a graph, or estimate memory."),
    "train": LazyCommand("train", "train", "Train a compiled training program over a data set."),
    "verify": LazyCommand("verify", "verify", "Check programs for every problem they have; exit 1 on any."),
    "view": LazyCommand("view", "view", "Write an interactive picture of a program (HTML)."),
}


# what a user may type as a command that is an option of another (a profiler's words)
OPTION_COMMANDS = {
    "memory": "a step's peak memory is 'gradc show --memory' (estimated) or 'gradc run --profile' (measured)",
    "profile": "'gradc run --profile' times each op type and measures its memory",
}


class LazyGroup(click.Group):
    """A click group whose commands in LAZY_COMMANDS are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.commands or name not in LAZY_COMMANDS:
            return super().get_command(ctx, name)
        lazy = LAZY_COMMANDS[name]
        command = getattr(importlib.import_module(f"{__name__}.{lazy.module}"), lazy.attr)
        command.short_help = lazy.help_line
        self.add_command(command, name)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name = args[0] if args else ""
        if name and not name.startswith("-") and not ctx.resilient_parsing and self.get_command(ctx, name) is None:
            if name in OPTION_COMMANDS:
                ctx.fail(f"No such command '{name}': {OPTION_COMMANDS[name]}")
            close = closest(name, self.list_commands(ctx))
            if close:
                ctx.fail(f"No such command '{name}'. Did you mean '{close}'?")
        return super().resolve_command(ctx, args)

    def _help_lines(self, ctx: click.Context, prefix: str = "", limit: int = 45) -> list[tuple[str, str]]:
        """(name, help line) of each visible command whose name starts with ``prefix``; none imported for it."""
        lines = []
        for name in self.list_commands(ctx):
            if not name.startswith(prefix):
                continue
            if name in LAZY_COMMANDS and name not in self.commands:
                lines.append((name, LAZY_COMMANDS[name].help_line))
            elif (command := self.get_command(ctx, name)) is not None and not command.hidden:
                lines.append((name, command.get_short_help_str(limit)))
        return lines

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names), default=0)
        rows = self._help_lines(ctx, limit=limit)
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        items = [CompletionItem(name, help=line) for name, line in self._help_lines(ctx, incomplete)]
        return items + click.Command.shell_complete(self, ctx, incomplete)
