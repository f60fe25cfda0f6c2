"""`gradc run` and `gradc precision`: the commands that run a program with the numpy executor (`gradc check`:
check.py)."""

from __future__ import annotations

import functools
import io
from contextlib import nullcontext

import click
import numpy as np

from ..bfloat16 import round_parameters
from ..errors import GradcError
from ..executor import Executor, Scope
from ..executor.feeding import program_inputs
from ..executor.lod import lod_arrays
from ..executor.selected_rows import as_dense
from ..io import check_writable, is_stdout, load, write_atomic
from ..training.params import read_files, require_values, run_startup
from .check import program_and_values
from .json_output import emit, held_notes
from .name_globs import fetched_globs
from .run_examples import per_example_feeds
from .run_feeds import FEED_HELP, feed_arrays, model_inputs, naming_feed
from .run_repeat import stacked
from .run_reports import (
    dense_array,
    fetched,
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
    prog = load(program_path, lazy=False)
    scope, executor = Scope(), Executor()
    for startup in startups:
        run_startup(executor, startup, scope)
    for name, value in read_files(params, prog, strict, startups).items():
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
@click.option("--feed", type=click.Path(), multiple=True, help="Inputs, an .npz of name -> array (a LoD: name@LOD0, "
              "... beside it, each level's offsets), or a .csv whose header names each column's input var, as --data "
              f"of train. {FEED_HELP}")
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
@click.option("--per-example", is_flag=True, help="Run once for each example of the feed (a batch of one: row i of "
              "each array fed to a var with a batch axis; other inputs whole), each fetch's values stacked along a "
              "new first axis: per-example gradients, EWC's Fisher diagonal the mean of their squares.")
@click.option("--test-mode", is_flag=True, help="Dropout and batch norm in test mode (is_test on, as Paddle's "
              "clone(for_test=True)): a forward program saved before minimize() gives its eval outputs.")
@STRICT_PARAMS
def run(program, feed, params, startups, fetches, out, profile, seed, as_json, strict_params, repeat, per_example,
        test_mode):
    """Run a program with the numpy executor.

    Exit codes: 0 it ran; 1 it could not (one 'gradc: error:' line on stderr; with --json, nothing on stdout);
    2 a usage error."""
    if per_example and repeat > 1:
        raise click.UsageError("--per-example and --repeat: give one (each example's runs would interleave)")
    if as_json and out and is_stdout(out):
        raise click.UsageError("--json and --out -: both would write to stdout; give --out a file")
    if out:
        check_writable(out)
    if seed is not None:
        from ..executor import randomness
        randomness.seed(seed)
    prog, executor, scope = _session(program, params, startups, strict_params)
    if test_mode:
        from ..training.programs import set_test_mode
        set_test_mode(prog)
    fetches, keys = _fetch_keys(prog, fetches)
    feeds = model_inputs(prog, feed_arrays(feed, prog), feed)
    if fetches and not set(program_inputs(prog.global_block)) <= feeds.keys():   # a run imports no optimizer else
        from ..training.programs import fetched_part
        prog = fetched_part(prog, fetches, feeds)
    if out and not fetches and not any(op.type == "fetch" for op in prog.global_block.ops):
        raise GradcError(f"--out '{out}': nothing to write, as '{program}' fetches nothing of itself: name the values "
                         f"with --fetch NAME, or a glob ('*.w_0@GRAD'; repeatable)")
    each = per_example_feeds(prog, feeds) if per_example else [feeds] * repeat
    require_values(prog, scope, feeds, params, program)
    measuring = nullcontext()
    if profile:
        from ..profile import profiling  # with tracemalloc: imported only for a profiled run
        measuring = profiling()
    with measuring as measured, naming_feed(feed), held_notes():
        runs = [executor.run(prog, feed=fed, fetch_list=list(fetches), scope=scope, return_lod=True) for fed in each]
    if not fetches:  # a saved inference program names its results with fetch ops
        fetches = keys = [op.input("X")[0] for op in prog.global_block.ops if op.type == "fetch"]
    values = (stacked(fetches, runs, "--per-example") if per_example else runs[0] if repeat == 1
              else stacked(fetches, runs))
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


@click.command()
@program_and_values("Initialiser programs to run first, in order. Repeatable.")
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
