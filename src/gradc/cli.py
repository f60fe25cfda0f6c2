"""The `gradc` command line: compile and convert here; run, check, train, export, show, ops, view, diff and
verify in gradc.commands, each imported when it runs.

Every failure is one line on stderr and exit code 1; no output file is left half-written.
"""

from __future__ import annotations

import signal
import sys
import traceback
import warnings

import click

from .cli_memory import memory_options, memory_passes
from .commands import LazyGroup
from .errors import GradcError, Interrupted
from .io import FORMATS, check_writable, load, save
from .limits import LIMITS, parse_bytes
from .optimizers.cli_options import build_optimizer, optimizer_options
from .passes import BackwardPass, OptimizerPass, Pipeline, VerifyPass, make_pass
from .plugins import import_plugin
from .verification import verify


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
    try:
        LIMITS.max_bytes = parse_bytes(max_memory) if max_memory else LIMITS.max_bytes
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-memory") from None
    LIMITS.max_iterations = max_iterations or LIMITS.max_iterations
    for name in plugins:
        import_plugin(name)
    if not debug and "numpy" in sys.modules:   # the commands that compute brought it in; compile runs without
        sys.modules["numpy"].seterr(all="ignore")


@cli.command()
@click.argument("program", type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(), help="Where to write the result.")
@click.option("--loss", help="The loss var (default: the single float scalar written by the last op).")
@click.option("--param", "params", multiple=True, help="Only these parameters get gradients. Repeatable.")
@click.option("--no-grad", "no_grad", multiple=True, help="Vars that get no gradient. Repeatable.")
@click.option("--pass", "extra_passes", multiple=True, metavar="NAME",
              help="Run a registered pass after the backward pass. Repeatable.")
@click.option("--startup-out", type=click.Path(),
              help="Where the optimizer's initialiser program goes (default: OUTPUT with .startup before the suffix).")
@click.option("--no-verify", is_flag=True, help="Skip checking the compiled program (gradc verify) before writing it.")
@memory_options
@optimizer_options
def compile(program, output, loss, params, no_grad, extra_passes, startup_out, no_verify, recompute, recompute_budget,
            accumulate, **optimizer_settings):
    """Append the backward (training) ops of a forward program."""
    optimizer = build_optimizer(**optimizer_settings)
    memory = memory_passes(recompute, recompute_budget, accumulate)
    if optimizer is not None and "optimizer" in extra_passes:
        raise GradcError("give --optimizer or --pass optimizer, not both")
    updates = optimizer is not None or "optimizer" in extra_passes   # either writes a startup program too
    if updates:
        startup_out = startup_out or _with_suffix(output, ".startup")
    for path in (output, startup_out) if updates else (output,):
        check_writable(path)   # before any work, so a bad path leaves nothing half done
    prog = load(program)
    passes = [VerifyPass(), BackwardPass(loss, list(params) or None, no_grad), *memory]
    if optimizer is not None:
        passes.append(OptimizerPass(optimizer))
    results = Pipeline(passes + [make_pass(name) for name in extra_passes])(prog)
    problems = [] if no_verify else verify(prog, output)
    if problems:   # gradc's own output: a bug, reported before anything is written
        raise GradcError(f"the compiled program fails verification ({len(problems)} problem(s); --no-verify "
                         f"skips this): {problems[0]}")
    save(prog, output)
    if updates:
        save(results["optimizer"], startup_out)
    pairs = results["backward"]
    width = max([len(p) for p, _ in pairs] + [9])
    lines = [f"{'parameter':<{width}}  gradient"] + [f"{param:<{width}}  {grad}" for param, grad in pairs]
    click.echo("\n".join(lines))   # one write: an echo per line cost 40 ms for 6,000 parameters
    for name in [p.name for p in memory] + list(extra_passes):
        if results[name] is not None and name != "optimizer":
            click.echo(f"{name}: {results[name]}")
    click.echo(f"wrote {output} ({prog.num_ops()} ops, {len(pairs)} parameter gradients)")
    if updates:
        click.echo(f"wrote {startup_out} (initialises the {optimizer_settings['optimizer'] or 'sgd'} learning rate "
                   f"and accumulators)")


def _with_suffix(path: str, infix: str) -> str:
    """train.pb -> train.startup.pb"""
    stem, dot, suffix = path.rpartition(".")
    return f"{stem}{infix}.{suffix}" if dot and "/" not in suffix else path + infix


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
    save(load(source), target, fmt)
    click.echo(f"wrote {target}")


_DEBUG = [False]


def _interrupt(signum, frame):
    raise Interrupted("interrupted")


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
        click.echo(f"gradc: error: {_one_line(exc.format_message())} (see gradc --help)", err=True)
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

