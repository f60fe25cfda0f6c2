"""The `gradc` command line: the group, its options and convert here; compile, run, check, train, export, show,
ops, view, diff and verify in gradc.commands, each imported when it runs.

Every failure is one line on stderr and exit code 1; no output file is left half-written.
"""

from __future__ import annotations

import signal
import sys
import traceback
import warnings

import click

from .commands import LazyGroup
from .errors import GradcError, GradcNotice, GradcWarning, Interrupted
from .io import FORMATS, check_writable, is_stdout, load, save
from .limits import LIMITS, parse_bytes
from .plugins import import_plugin


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE",
              help="Import a Python module (a name, or a path to a .py file) first: it may register ops, kernels "
                   "or passes. Repeatable.")
@click.option("--max-memory", metavar="SIZE", help="The largest tensor gradc may allocate, e.g. 512M or 4G "
              "(default: half the machine's memory).")
@click.option("--max-iterations", type=click.IntRange(min=1), metavar="N",
              help="The most iterations one while loop may run (default 1,000,000).")
@click.option("--debug", is_flag=True, help="On an error, show the traceback too (and numpy's warnings).")
@click.version_option(None, "-V", "--version", package_name="gradc")
def cli(plugins: tuple[str, ...], max_memory: str | None, max_iterations: int | None, debug: bool) -> None:
    """Compile PaddlePaddle ProgramDescs into training programs; run them with numpy."""
    _DEBUG[0] = debug
    if not debug:   # numeric trouble shows as NaN/Inf in results, not as warnings before an error line
        warnings.simplefilter("ignore")
    warnings.simplefilter("always", GradcWarning)
    warnings.showwarning = _show_warning
    try:
        LIMITS.max_bytes = parse_bytes(max_memory) if max_memory else LIMITS.max_bytes
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-memory") from None
    LIMITS.max_iterations = max_iterations or LIMITS.max_iterations
    for name in plugins:
        import_plugin(name)
    if not debug and "numpy" in sys.modules:   # the commands that compute brought it in; compile runs without
        sys.modules["numpy"].seterr(all="ignore")


@cli.command(short_help="Convert a program between .pb, .pbtxt, .pbjson and PIR JSON.")
@click.argument("source", type=click.Path())
@click.argument("target", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Output format (default: by TARGET's extension: .pb binary, .pbtxt text, .pbjson protobuf "
                   "JSON, .json Paddle 3's PIR JSON).")
def convert(source, target, fmt):
    """Convert a program between binary .pb, text .pbtxt, protobuf JSON (.pbjson) and Paddle 3's PIR JSON
    (.json). Reading sniffs the format, so SOURCE may be any of them."""
    check_writable(target)
    save(load(source, lazy=False), target, fmt)
    click.echo(f"wrote {target}", err=is_stdout(target))


_DEBUG = [False]


def _interrupt(signum, frame):
    raise Interrupted("interrupted")


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    if issubclass(category, GradcWarning):
        kind = "note" if issubclass(category, GradcNotice) else "warning"
        click.echo(f"gradc: {kind}: {_one_line(message)}", err=True)
    else:
        click.echo(warnings.formatwarning(message, category, filename, lineno, line), err=True, nl=False)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main() -> None:
    signal.signal(signal.SIGINT, _interrupt)
    try:
        cli.main(standalone_mode=False, prog_name="gradc")   # also names the completion variable: _GRADC_COMPLETE
    except Interrupted as exc:
        click.echo(f"gradc: {_one_line(exc)}", err=True)
        sys.exit(130)
    except click.exceptions.Abort:
        click.echo("gradc: aborted", err=True)
        sys.exit(1)
    except click.UsageError as exc:
        if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):   # bare `gradc`: the help, as written
            click.echo(exc.format_message(), err=True)
            sys.exit(2)
        command = exc.ctx.command_path if exc.ctx is not None else "gradc"
        click.echo(f"gradc: error: {_one_line(exc.format_message())} (see {command} --help)", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"gradc: error: {_one_line(exc.format_message())}", err=True)
        sys.exit(exc.exit_code)
    except GradcError as exc:
        if _DEBUG[0]:
            traceback.print_exc()
        click.echo(f"gradc: error: {_one_line(exc)}", err=True)
        sys.exit(1)
    except Exception as exc:  # a bug in gradc: still one line, and say how to report it
        if _DEBUG[0]:
            traceback.print_exc()
        click.echo(f"gradc: internal error: {type(exc).__name__}: {_one_line(exc)} (please report this; "
                   f"--debug shows the traceback)", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()

