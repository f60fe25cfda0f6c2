"""`gradc run`, `gradc check` and `gradc precision`: the commands that run a program with the numpy executor."""

from __future__ import annotations

import functools
import io
import sys
import warnings
from contextlib import nullcontext

import click
import numpy as np

from ..bfloat16 import round_parameters
from ..errors import GradcError, GradcNotice
from ..executor import Executor, Scope, randomness
from ..executor.feeding import program_inputs
from ..executor.lod import lod_arrays
from ..executor.selected_rows import as_dense
from ..io import check_writable, is_stdout, load, write_atomic
from ..ir import DIFFERENTIABLE_DTYPES
from ..training.params import initialised_values, read_files, require_values, run_startup
from .json_output import emit, held_notes
from .loss_option import loss_option
from .name_globs import fetched_globs, matching
from .run_feeds import feed_arrays, model_inputs, naming_feed
from .run_repeat import stacked
from .run_reports import (
    checked_document,
    compared_nothing,
    dense_array,
    fetched,
    kinks_said,
    mismatch_place,
    precision_document,
    summary_line,
)


def STRICT_PARAMS(command):   # noqa: N802 (an option decorator, named as the others are)
    """The --strict-params flag of a command that takes --params, refused without it (it would check nothing)."""
    @functools.wraps(command)
    def checked(**options):
        if options["strict_params"] and not options["params"]:
            raise click.UsageError("--strict-params: only with --params")
        return command(**options)

    return click.option("--strict-params", is_flag=True, help="Refuse a --params file that holds values for vars the "
                        "program does not have (by default they are left out, with a warning).")(checked)


def _session(program_path: str, params: tuple[str, ...], startups, strict: bool) -> tuple:
    """The program, an executor, and a scope holding what the startup programs and the params file give."""
    prog = load(program_path)
    scope, executor = Scope(), Executor()
    for startup in startups:
        run_startup(executor, startup, scope)
    for name, value in read_files(params, prog, strict).items():
        scope[name] = value
    round_parameters(prog, scope)   # a pure bfloat16 program's, as Paddle's amp_init
    return prog, executor, scope


def _out_arrays(fetches, values) -> dict[str, np.ndarray]:
    return {key: array for name, value in zip(fetches, values)
            for key, array in lod_arrays(name, as_dense(value)).items()}


def _fetch_keys(prog, fetches: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The vars of --fetch NAME or NAME=KEY options and the keys --out stores them under (a var whose own name holds
    '=' is taken whole); two fetches stored under one key are refused, as the second would replace the first."""
    names, keys = [], []
    for fetch in fetched_globs(prog, fetches):
        name, key = (fetch.rsplit("=", 1) if "=" in fetch and prog.global_block.find_var(fetch) is None
                     else (fetch, fetch))
        names.append(name)
        keys.append(key)
    twice = sorted({key for key in keys if len({name for name, other in zip(names, keys) if other == key}) > 1})
    if twice:
        raise GradcError(f"--fetch: two values would be stored as {', '.join(twice)} in --out")
    return names, keys


def _save_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    write_atomic(path, buffer.getvalue())


@click.command()
@click.argument("program", type=click.Path())
@click.option("--feed", type=click.Path(), help="Inputs, an .npz of name -> array (a LoD: name@LOD0, ... beside "
              "it, each level's offsets), or a .csv whose header names each column's input var, as --data of train.")
@click.option("--params", type=click.Path(), multiple=True,
              help="Persistable values (parameters): an .npz, Paddle's .pdiparams, its pickled .pdparams / .pdopt, or "
                   "Paddle 1.x's directory of one file per var. Repeatable, loaded in order.")
@click.option("--startup", "startups", multiple=True, type=click.Path(),
              help="Initialiser programs to run first, in order. Repeatable.")
@click.option("--fetch", "fetches", multiple=True, help="A var to fetch, or a glob of them ('*.w_0@GRAD'); "
              "NAME=KEY stores it as KEY in --out (a decoding step's caches under the names the next step is fed). "
              "Repeatable. An input the fetches do not "
              "need may be left out of --feed: only the ops they need run.")
@click.option("-o", "--out", type=click.Path(), help="Write the fetched values to this .npz (a LoD as name@LOD0, "
              "...).")
@click.option("--profile", is_flag=True, help="Print the time and peak memory of each op type (kernels measured "
              "with tracemalloc on, which slows them).")
@click.option("--seed", type=click.IntRange(min=0), help="Seed the draws of random ops without a seed of their own, "
              "as paddle.seed seeds Paddle's: initialisers and dropout then draw Paddle's values.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead: each fetched var's name, dtype, "
              "shape and statistics (a one-element var's value; the arrays themselves go to --out).")
@click.option("--repeat", type=click.IntRange(min=1), default=1, help="Run N times, random ops drawing on from one "
              "stream (as N runs after one paddle.seed: MC dropout's passes); each fetch's N values are stacked along "
              "a new first axis.")
@STRICT_PARAMS
def run(program, feed, params, startups, fetches, out, profile, seed, as_json, strict_params, repeat):
    """Run a program with the numpy executor.

    Exit codes: 0 it ran; 1 it could not (one 'gradc: error:' line on stderr; with --json, nothing on stdout);
    2 a usage error."""
    if as_json and out and is_stdout(out):
        raise click.UsageError("--json and --out -: both would write to stdout; give --out a file")
    if out:
        check_writable(out)
    if seed is not None:
        from ..executor import randomness
        randomness.seed(seed)
    prog, executor, scope = _session(program, params, startups, strict_params)
    fetches, keys = _fetch_keys(prog, fetches)
    feeds = model_inputs(prog, feed_arrays(feed, prog), feed)
    if fetches and not set(program_inputs(prog.global_block)) <= feeds.keys():   # a run imports no optimizer else
        from ..training.programs import fetched_part
        prog = fetched_part(prog, fetches, feeds)
    require_values(prog, scope, feeds, params, program)
    measuring = nullcontext()
    if profile:
        from ..profile import profiling  # with tracemalloc: imported only for a profiled run
        measuring = profiling()
    with measuring as measured, naming_feed(feed), held_notes():
        runs = [executor.run(prog, feed=feeds, fetch_list=list(fetches), scope=scope, return_lod=True)
                for _ in range(repeat)]
    if not fetches:  # a saved inference program names its results with fetch ops
        fetches = keys = [op.input("X")[0] for op in prog.global_block.ops if op.type == "fetch"]
    values = runs[0] if repeat == 1 else stacked(fetches, runs)
    if as_json:
        document = {"program": str(program), "ops": prog.num_ops(),
                    "fetched": [fetched(name, value) for name, value in zip(fetches, values)], "out": out,
                    **({"profile": measured.as_data()} if measured is not None else {})}
        if out:
            _save_npz(out, _out_arrays(keys, values))
        emit(document)
        return
    aside = bool(out) and is_stdout(out)   # `--out -`: the arrays alone on stdout
    if not fetches:
        click.echo(f"ran {program} ({prog.num_ops()} ops); nothing fetched: name the values to print with --fetch "
                   f"NAME (repeatable; gradc show lists the vars)", err=aside)
    if out:   # before the listing, which a reader such as `| head` may cut short
        _save_npz(out, _out_arrays(keys, values))
    for name, key, value in zip(fetches, keys, values):
        click.echo(summary_line(name if key == name else f"{name} (as {key})", dense_array(value)), err=aside)
    if out:
        click.echo(f"wrote {out}", err=aside)
    if measured is not None:
        click.echo(measured.report(), err=aside)


def _program_and_values(startup_help: str):
    """check's and precision's program argument and the options that give it values."""
    def apply(command):
        for option in reversed([
                click.argument("program", type=click.Path()),
                click.option("--feed", type=click.Path(), help="Inputs, an .npz."),
                click.option("--params", type=click.Path(), multiple=True,
                             help="Parameters: an .npz, Paddle's .pdiparams, or its .pdparams. Repeatable."),
                click.option("--startup", "startups", multiple=True, type=click.Path(), help=startup_help)]):
            command = option(command)
        return command
    return apply


@click.command()
@_program_and_values("Initialiser programs run first, in order (values --params does not give). Repeatable.")
@loss_option("the single float scalar written by the last op", "the gradients of the sum of the losses, each "
             "a float var of any shape (its elements summed), as gradc compile differentiates them.")
@click.option("--wrt", multiple=True, help="Vars to check (default: every parameter with a gradient; a glob matches "
              "names: '*lora*'; an intermediate var is fed, perturbed, to the ops after it). Repeatable.")
@click.option("--max-elements", type=click.IntRange(min=1), default=20, show_default=True,
              help="Elements checked per var, chosen at random (each costs two forward runs).")
@click.option("--directions", type=click.IntRange(min=1),
              help="Instead of elements, compare each var along N random directions: each moves every element, "
                   "so a wrong gradient anywhere shows, for two forward runs a direction whatever the var's size.")
@click.option("--rtol", type=float, default=1e-5, show_default=True, help="Relative tolerance of the comparison.")
@click.option("--atol", type=float, default=1e-7, show_default=True, help="Absolute tolerance of the comparison.")
@click.option("--test-mode", is_flag=True, help="Dropout and batch norm in test mode, as compile --test-mode.")
@click.option("--seed", type=click.IntRange(min=0), help="Seed the draws of random ops without a seed of their own "
              "as paddle.seed(N) does, before the startup programs. Every run of the comparison draws what the first "
              "draws (a VAE's noise, dropout's mask), with or without it.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead: the loss, each var checked, and "
              "each mismatch as a problem naming its var.")
def check(program, feed, params, startups, losses, wrt, max_elements, directions, rtol, atol, test_mode, seed,
          as_json):
    """Check a program's compiled gradients against central differences, in float64.

    Exit codes: 0 every gradient agrees; 1 some differ (with --json, its object says which and stderr is empty)
    or the check could not run (one 'gradc: error:' line on stderr; with --json, nothing on stdout); 2 a usage
    error."""
    from ..amp_loss import unscaled_loss
    from ..backward import default_loss
    from ..backward.ungraded import warn_ungraded
    from ..cut_paths import gradientless_ops, sparse_padding_lookups
    from ..gradcheck import compare_program  # and the layers it builds with: `gradc run` needs neither
    from ..passes.backward import refuses_again
    from ..training.programs import checkable_forward_part, is_training_op, set_test_mode, updates_parameters
    whole = prog = load(program)
    if test_mode:
        set_test_mode(prog)
    compiled = note = None   # the note said once the check has run: a check that cannot run says one line
    if updates_parameters(prog) and (forward := checkable_forward_part(prog)) is not None:
        # Paddle's minimize program, saved as it trains, has no forward program beside it: check its forward part
        note = f"'{program}' is a training program: checking its forward part (its backward and optimizer ops left out)"
        prog = forward
    elif (any(is_training_op(op) for op in prog.global_block.ops) and refuses_again(prog, losses)
          and (forward := checkable_forward_part(prog)) is not None):
        # a compiled program without an optimizer (an attack's input gradient): the gradients it writes are checked
        note = (f"'{program}' has a backward: checking the gradients it computes against central differences of its "
                f"forward part")
        compiled, prog = prog, forward
    if updates_parameters(prog):   # each forward run of the comparison would move the parameters it differentiates
        raise GradcError(f"'{program}' is already a training program (it has optimizer ops, which would move the "
                         f"parameters at every run of the comparison): check the forward program it was compiled from")
    if any(is_training_op(op) for op in prog.global_block.ops) and refuses_again(prog, losses):
        raise GradcError(f"'{program}' is already a training program (it has backward or optimizer ops): check the "
                         f"forward program it was compiled from, or name a loss computed after its backward (--loss)")
    wrt = matching(wrt, [name for name, var in prog.global_block.vars.items() if var.dtype in DIFFERENTIABLE_DTYPES],
                   "--wrt", "float var of block 0")
    if seed is not None:
        randomness.seed(seed)
    values = initialised_values(startups)
    values.update(read_files(params, whole))   # a training program's file holds its optimizer state too
    # the pick compare_program would make, named for --json; of an AMP program the loss before its scaling
    losses = list(losses) or [unscaled_loss(whole.global_block, default_loss(prog))]
    loss = losses if len(losses) > 1 else losses[0]   # None: compare_program says why
    with naming_feed(feed):
        _, checks = compare_program(prog, model_inputs(prog, feed_arrays(feed, prog), feed), list(wrt) or None, loss,
                                    values, rtol=rtol, atol=atol,
                                    max_elements=max_elements, float64=True, directions=directions,
                                    compiled=compiled)
    if note:
        warnings.warn(note, GradcNotice, stacklevel=2)
    if not wrt:   # a parameter with no gradient is checked by no row: say which and why
        warn_ungraded(prog.global_block, [c.var for c in checks], losses)
    if as_json:
        emit(checked_document(program, losses, checks, rtol, atol))
        if any(c.mismatch is not None for c in checks):
            sys.exit(1)
        return
    width = max([len(c.var) for c in checks] + [3])
    for c in checks:
        m = c.mismatch
        verdict = ("not compared" if compared_nothing(c) else "ok" if m is None else
                   f"MISMATCH {mismatch_place(m)}: compiled {m.analytic:.6g}, numeric {m.numeric:.6g}") + kinks_said(c)
        compared = f"{c.directions:>3} dir/{c.size:<6}" if c.directions else f"{c.checked:>5}/{c.size:<6}"
        click.echo(f"{c.var:<{width}}  {compared} max |compiled - numeric| {c.max_abs_error:.2e}  {verdict}")
    bad = [c.var for c in checks if c.mismatch is not None]
    if bad:
        padded = sparse_padding_lookups(prog.global_block, bad)
        cut = gradientless_ops(prog.global_block, [name for name in bad if name not in padded], losses)
        why = (f"; the loss depends on them through ops without a gradient (Paddle defines none) or inputs that get "
               f"none (a loss's label, as in Paddle), a part central differences count and the compiled gradient "
               f"does not: {', '.join(cut)}" if cut else "")
        why += "".join(f"; {name} is read by {lookup}: its padding row gets the output gradient of the padding "
                       f"positions, as Paddle's sparse kernel gives it, where central differences give 0 (the loss "
                       f"does not depend on it)" for name, lookup in padded.items())
        raise GradcError(f"gradients differ from central differences for {', '.join(bad)}{why}")
    differentiated = f"loss {loss}" if len(losses) == 1 else f"the sum of the losses {' + '.join(losses)}"
    unchecked = [c.var for c in checks if compared_nothing(c)]
    said = f"; {', '.join(unchecked)} compared along no direction (each crosses a kink)" if unchecked else ""
    click.echo(f"{len(checks) - len(unchecked)} var(s) checked: compiled gradients agree with central differences "
               f"({differentiated}){said}")


@click.command()
@_program_and_values("Initialiser programs to run first, in order. Repeatable.")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True, help="Ops to list.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of random ops without a seed of their own, the same in both runs.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead: eps, and each row's op index, "
              "type, output, error, inputs, growth and own error.")
def precision(program, feed, params, startups, top, seed, as_json):
    """Find the ops where a float32, float16 or bfloat16 program loses precision, against its float64 run.

    Exit codes: 0 it compared; 1 it could not (one 'gradc: error:' line on stderr; with --json, nothing on stdout);
    2 a usage error."""
    from ..rounding_audit import audit
    prog, _, scope = _session(program, params, startups, False)
    feeds = model_inputs(prog, feed_arrays(feed, prog), feed)
    require_values(prog, scope, feeds, params, program)
    given = {name: scope.find(name) for name, var in prog.global_block.vars.items()
             if var.persistable and scope.find(name) is not None}
    with naming_feed(feed):
        rows = audit(prog, feeds, given, top, seed)
    if not rows:
        raise GradcError(f"'{program}': no op of block 0 outside control flow writes a float32, float16 or bfloat16 "
                         f"value that no other op overwrites: nothing to compare")
    if as_json:
        emit(precision_document(program, rows))
        return
    width, kind = max(len(row.var) for row in rows), max(len(row.type) for row in rows)
    click.echo(f"{'op':>5}  {'type':<{kind}}  {'output':<{width}}  {'dtype':<8}  {'error':>8}  {'inputs':>8}  "
               f"{'growth':>8}  {'own':>8}")
    for row in rows:
        own = "-" if row.own is None else f"{row.own:.1e}"
        click.echo(f"{row.index:>5}  {row.type:<{kind}}  {row.var:<{width}}  {row.dtype:<8}  {row.error:>8.1e}  "
                   f"{row.inputs:>8.1e}  {row.growth:>8.3g}  {own:>8}")
    epsilons = ", ".join(f"{dtype} {eps:.1e}" for dtype, eps in dict((row.dtype, row.eps) for row in rows).items())
    click.echo(f"error: the output's distance from the float64 run over its largest value; inputs: the largest error "
               f"of what the op read; growth: error / max(inputs, eps of the output's dtype); own: the op alone in "
               f"float64 on what it read (its kernel's rounding, about eps ({epsilons}) when exact: a growth with a "
               f"small own error is the op amplifying what it was given; '-' for a random op, whose draw alone "
               f"differs)")
