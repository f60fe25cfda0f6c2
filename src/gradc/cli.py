"""The `gradc` command line: compile, run, show, ops, convert.

Every failure is one line on stderr and exit code 1; no output file is left half-written.
"""

from __future__ import annotations

import importlib
import importlib.util
import io as _io
import os
import signal
import sys
import traceback
import warnings
from pathlib import Path

import click
import numpy as np

from . import registry, schedules
from .cli_memory import memory_options, memory_passes
from .errors import FormatError, GradcError
from .executor import KERNELS, Executor, Scope
from .gradcheck import compare_program
from .io import FORMATS, check_writable, load, save, write_atomic
from .io.arrays import read_npz
from .io.pdiparams import read_params, write_params
from .ir.types import NUMPY_DTYPE_NAMES
from .limits import LIMITS, parse_bytes
from .listing import program_listing
from .opdoc import describe
from .optimizers.cli_options import build_optimizer, optimizer_options
from .passes import BackwardPass, OptimizerPass, Pipeline, VerifyPass, make_pass


def _load_params(path: str | None, program) -> dict[str, np.ndarray]:
    """Persistable values from an .npz (name -> array) or a Paddle .pdiparams file, each checked against
    the var the program declares."""
    if not path:
        return {}
    values = read_params(path, program) if path.endswith(".pdiparams") else read_npz(path, "params")
    return {name: _checked_param(program, name, value, path) for name, value in values.items()}


def _session(program_path: str, params: str | None, startups) -> tuple:
    """The program, an executor, and a scope holding what the startup programs and the params file give."""
    prog = load(program_path)
    scope, executor = Scope(), Executor()
    for startup in startups:
        executor.run(load(startup), scope=scope)
    for name, value in _load_params(params, prog).items():
        scope[name] = value
    return prog, executor, scope


def _checked_param(program, name: str, value, source: str):
    """A parameter value must fit the var the program declares: shape (-1 fits any size) and dtype."""
    var = program.global_block.find_var(name)
    if var is None or var.shape is None:
        return value
    if len(value.shape) != len(var.shape) or any(d >= 0 and d != s for d, s in zip(var.shape, value.shape)):
        raise FormatError(f"params '{source}': '{name}' has shape {list(value.shape)}, but the program declares "
                          f"{var.shape}")
    expected = NUMPY_DTYPE_NAMES.get(var.dtype)
    if expected is not None and value.dtype.name != expected:
        raise FormatError(f"params '{source}': '{name}' is {value.dtype}, but the program declares {expected}")
    return value


def _save_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    buffer = _io.BytesIO()
    np.savez(buffer, **arrays)
    write_atomic(path, buffer.getvalue())


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE",
              help="Import a Python module (a name, or a path to a .py file) first: it may register ops, kernels "
                   "or passes. Repeatable.")
@click.option("--max-memory", metavar="SIZE", help="The largest tensor gradc may allocate, e.g. 512M or 4G "
              "(default: half the machine's memory).")
@click.option("--max-iterations", type=click.IntRange(min=1), metavar="N",
              help="The most iterations one while loop may run (default 1,000,000).")
@click.option("--debug", is_flag=True, help="On an error, show the traceback too (and numpy's warnings).")
@click.version_option(package_name="gradc")
def cli(plugins: tuple[str, ...], max_memory: str | None, max_iterations: int | None, debug: bool) -> None:
    """Compile PaddlePaddle ProgramDescs into training programs; run them with numpy."""
    _DEBUG[0] = debug
    if not debug:   # numeric trouble shows as NaN/Inf in results, not as warnings before an error line
        warnings.simplefilter("ignore")
        np.seterr(all="ignore")
    try:
        LIMITS.max_bytes = parse_bytes(max_memory) if max_memory else LIMITS.max_bytes
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-memory") from None
    LIMITS.max_iterations = max_iterations or LIMITS.max_iterations
    for name in plugins:
        import_plugin(name)


def import_plugin(name: str) -> None:
    """A module name (importable from the current directory too) or a path to a .py file."""
    try:
        if name.endswith(".py") or "/" in name:
            path = Path(name)
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or not path.is_file():
                raise ImportError(f"no file {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module
            spec.loader.exec_module(module)
        else:
            sys.path.insert(0, os.getcwd())
            importlib.import_module(name)
    except GradcError:
        raise
    except Exception as exc:  # noqa: BLE001 - the plugin's own bug: one line naming it
        raise GradcError(f"cannot import plugin '{name}': {type(exc).__name__}: {exc}") from None


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
@memory_options
@optimizer_options
def compile(program, output, loss, params, no_grad, extra_passes, startup_out, recompute, recompute_budget,
            accumulate, **optimizer_settings):
    """Append the backward (training) ops of a forward program."""
    optimizer = build_optimizer(**optimizer_settings)
    memory = memory_passes(recompute, recompute_budget, accumulate)
    if optimizer is not None:
        startup_out = startup_out or _with_suffix(output, ".startup")
    for path in (output, startup_out) if optimizer is not None else (output,):
        check_writable(path)   # before any work, so a bad path leaves nothing half done
    prog = load(program)
    passes = [VerifyPass(), BackwardPass(loss, list(params) or None, no_grad), *memory]
    if optimizer is not None:
        passes.append(OptimizerPass(optimizer))
    results = Pipeline(passes + [make_pass(name) for name in extra_passes])(prog)
    save(prog, output)
    if optimizer is not None:
        save(results["optimizer"], startup_out)
    pairs = results["backward"]
    width = max([len(p) for p, _ in pairs] + [9])
    click.echo(f"{'parameter':<{width}}  gradient")
    for param, grad in pairs:
        click.echo(f"{param:<{width}}  {grad}")
    for name in [p.name for p in memory] + list(extra_passes):
        if results[name] is not None:
            click.echo(f"{name}: {results[name]}")
    click.echo(f"wrote {output} ({prog.num_ops()} ops, {len(pairs)} parameter gradients)")
    if optimizer is not None:
        click.echo(f"wrote {startup_out} (initialises the {optimizer_settings['optimizer']} learning rate and "
                   f"accumulators)")


def _with_suffix(path: str, infix: str) -> str:
    """train.pb -> train.startup.pb"""
    stem, dot, suffix = path.rpartition(".")
    return f"{stem}{infix}.{suffix}" if dot and "/" not in suffix else path + infix


@cli.command()
@click.argument("program", type=click.Path())
@click.option("--feed", type=click.Path(), help="Inputs, an .npz of name -> array.")
@click.option("--params", type=click.Path(),
              help="Persistable values (parameters): an .npz, or Paddle's .pdiparams.")
@click.option("--startup", type=click.Path(), help="An initialiser program to run first.")
@click.option("--fetch", "fetches", multiple=True, help="A var to fetch. Repeatable.")
@click.option("--out", type=click.Path(), help="Write the fetched values to this .npz.")
def run(program, feed, params, startup, fetches, out):
    """Run a program with the numpy executor."""
    if out:
        check_writable(out)
    prog, executor, scope = _session(program, params, [startup] if startup else [])
    feeds = read_npz(feed, "feed") if feed else {}
    values = executor.run(prog, feed=feeds, fetch_list=list(fetches), scope=scope)
    if not fetches:  # a saved inference program names its results with fetch ops
        fetches = [op.input("X")[0] for op in prog.global_block.ops if op.type == "fetch"]
    for name, value in zip(fetches, values):
        click.echo(_summary(name, np.asarray(value)))
    if out:
        _save_npz(out, dict(zip(fetches, (np.asarray(v) for v in values))))
        click.echo(f"wrote {out}")


@cli.command()
@click.argument("program", type=click.Path())
@click.option("--feed", required=True, type=click.Path(), help="Inputs of one step, an .npz.")
@click.option("--params", type=click.Path(),
              help="Initial persistable values: an .npz, or Paddle's .pdiparams.")
@click.option("--startup", "startups", multiple=True, type=click.Path(),
              help="Initialiser programs to run first, in order. Repeatable.")
@click.option("--steps", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--fetch", "fetches", multiple=True, help="Scalars to print each logged step. Repeatable.")
@click.option("--log-every", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--save-params", type=click.Path(),
              help="Write the trained persistable values here (.npz, or .pdiparams for Paddle).")
@click.option("--lr-schedule", metavar="SPEC",
              help="Learning rate per step, written before each run as Paddle's LRScheduler does: values "
                   "(0.1,0.05,0.01) or a Paddle scheduler, e.g. 'StepDecay(learning_rate=0.1, step_size=2)'.")
@click.option("--lr-var", help="The learning-rate var the schedule writes (default: the one the optimizer reads).")
def train(program, feed, params, startups, steps, fetches, log_every, save_params, lr_schedule, lr_var):
    """Run a compiled training program (backward + optimizer) for some steps on one batch."""
    if save_params:
        check_writable(save_params)
    prog, executor, scope = _session(program, params, startups)
    feeds = read_npz(feed, "feed")
    schedule = schedules.parse(lr_schedule) if lr_schedule else None
    for step in range(1, steps + 1):
        if schedule is not None:
            schedules.write_learning_rate(prog, scope, schedule(step - 1), lr_var)
        values = executor.run(prog, feed=feeds, fetch_list=list(fetches), scope=scope)
        if step % log_every == 0 or step == steps:
            shown = "  ".join(f"{n}={np.asarray(v).reshape(-1)[0]:.6g}" for n, v in zip(fetches, values))
            click.echo(f"step {step}: {shown}")
    if save_params:
        values = {name: np.asarray(scope[name]) for name in scope.keys()}
        if save_params.endswith(".pdiparams"):
            write_params(save_params, prog, values)
        else:
            _save_npz(save_params, values)
        click.echo(f"wrote {save_params} ({len(scope)} persistable values)")


@cli.command()
@click.argument("program", type=click.Path())
@click.option("--feed", type=click.Path(), help="Inputs, an .npz.")
@click.option("--params", type=click.Path(), help="Parameters: an .npz, or Paddle's .pdiparams.")
@click.option("--loss", help="The loss var (default: the single float scalar written by the last op).")
@click.option("--wrt", multiple=True, help="Vars to check (default: every parameter with a gradient). Repeatable.")
@click.option("--max-elements", type=click.IntRange(min=1), default=20, show_default=True,
              help="Elements checked per var, chosen at random (each costs two forward runs).")
@click.option("--rtol", type=float, default=1e-5, show_default=True)
@click.option("--atol", type=float, default=1e-7, show_default=True)
def check(program, feed, params, loss, wrt, max_elements, rtol, atol):
    """Check a program's compiled gradients against central differences, in float64."""
    prog = load(program)
    _, checks = compare_program(prog, read_npz(feed, "feed") if feed else {}, list(wrt) or None, loss,
                                _load_params(params, prog), rtol=rtol, atol=atol,
                                max_elements=max_elements, float64=True)
    width = max([len(c.var) for c in checks] + [3])
    for c in checks:
        verdict = "ok" if c.mismatch is None else (f"MISMATCH at {list(c.mismatch.index)}: compiled "
                                                   f"{c.mismatch.analytic:.6g}, numeric {c.mismatch.numeric:.6g}")
        click.echo(f"{c.var:<{width}}  {c.checked:>5}/{c.size:<6} max |compiled - numeric| {c.max_abs_error:.2e}  "
                   f"{verdict}")
    bad = [c.var for c in checks if c.mismatch is not None]
    if bad:
        raise GradcError(f"gradients differ from central differences for {', '.join(bad)}")
    click.echo(f"{len(checks)} var(s) checked: compiled gradients agree with central differences")


def _summary(name: str, value) -> str:
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biufc":
        return f"{name}: {type(value).__name__ if value is None or not isinstance(value, np.ndarray) else value.dtype}"
    head = f"{name}: {value.dtype}{list(value.shape)}"
    if value.size == 1:
        return f"{head} = {value.reshape(()).item():.8g}"
    if value.dtype.kind == "f" and value.size:
        return f"{head} mean={value.mean():.6g} min={value.min():.6g} max={value.max():.6g}"
    return head


@cli.command()
@click.argument("program", type=click.Path())
@click.option("--no-attrs", is_flag=True, help="Leave op attributes out.")
def show(program, no_attrs):
    """Print a readable listing: blocks, vars, ops."""
    click.echo(program_listing(load(program), attrs=not no_attrs))


@cli.command()
@click.argument("op_type", required=False)
def ops(op_type):
    """List registered op types, their grad makers and kernels; or describe OP_TYPE (slots, attributes,
    grad op)."""
    if op_type:
        opdef = registry.get(op_type)
        if opdef is None:
            raise GradcError(f"no op '{op_type}' is registered (gradc ops lists them)")
        click.echo(describe(opdef, op_type in KERNELS))
        return
    rows = []
    for op_type in sorted(registry.OPS):
        opdef = registry.OPS[op_type]
        rows.append((op_type, _grad_kind(opdef), "yes" if op_type in KERNELS else "no"))
    width = max(len(r[0]) for r in rows)
    grad_width = max(len(r[1]) for r in rows)
    click.echo(f"{'op':<{width}}  {'grad':<{grad_width}}  kernel")
    for op_type, grad, kernel in rows:
        click.echo(f"{op_type:<{width}}  {grad:<{grad_width}}  {kernel}")
    differentiable = sum(1 for d in registry.OPS.values() if d.differentiable)
    click.echo(f"{len(rows)} ops, {differentiable} differentiable, {sum(r[2] == 'yes' for r in rows)} with kernels")


def _grad_kind(opdef: registry.OpDef) -> str:
    if opdef.grad is registry.NO_GRAD:
        return "none"
    if opdef.grad is None:
        return f"(grad of {opdef.grad_op_of})" if opdef.grad_op_of else "-"
    if isinstance(opdef.grad, registry.GradOp):
        return opdef.grad.type_for(opdef)
    return "composite"


@cli.command()
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


class Interrupted(GradcError):
    """Ctrl-C: raised from the signal handler, so the run ends with one line (and commands may clean up)."""


def _interrupt(signum, frame):
    raise Interrupted("interrupted")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main() -> None:
    signal.signal(signal.SIGINT, _interrupt)
    try:
        cli.main(standalone_mode=False)
    except Interrupted:
        click.echo("gradc: interrupted", err=True)
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

