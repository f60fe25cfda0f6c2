"""`gradc export`: a (training) program written for inference, as Paddle's save_inference_model writes it, thin
over gradc.training.export."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import click

from ..errors import GradcWarning
from ..executor import Scope
from ..io import load
from ..training import export
from ..training.params import initialised_values, read_files
from .run import STRICT_PARAMS


def _inputs(inputs: tuple[str, ...], old_feeds: tuple[str, ...]) -> tuple[str, ...]:
    """The model's input var names from --input, or from the old spelling --feed (which every other command takes
    as an .npz file, so a file given to it here is a usage error naming the arrays it holds)."""
    if not old_feeds:
        return inputs
    if inputs:
        raise click.UsageError("give the model's inputs with --input alone (--feed is its old spelling)")
    files = [name for name in old_feeds if Path(name).suffix == ".npz" or Path(name).is_file()]
    if files:
        raise click.UsageError(f"export names the model's inputs, not a file of their values: "
                               f"{_input_options(files[0])} (--feed takes an .npz in run, train and check)")
    warnings.warn(f"export's --feed NAME is now --input NAME (--feed {' --feed '.join(old_feeds)} still works; "
                  f"--feed takes an .npz in run, train and check)", GradcWarning, stacklevel=1)
    return old_feeds


def _renamed(prog, names: tuple[str, ...], rename: dict[str, str]) -> list[str]:
    """The var names of NAME or NAME=NEW options (a var whose own name holds '=' is taken whole), NEW into rename."""
    plain = []
    for name in names:
        if "=" in name and prog.global_block.find_var(name) is None:
            name, new = name.rsplit("=", 1)
            rename[name] = new
        plain.append(name)
    return plain


def _input_options(path: str) -> str:
    """'--input a --input b' for the arrays of an .npz that exists, else how to name an input."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = [member[:-4] for member in archive.namelist() if member.endswith(".npy")]
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError):
        names = []   # only a hint: what read_npz says of the file comes later
    return f"for its arrays, {' '.join(f'--input {name}' for name in names)}" if names else "--input NAME, repeatable"


@click.command("export")
@click.argument("program", type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(),
              help="The prefix: writes PREFIX.pdmodel (or PREFIX.json) and PREFIX.pdiparams.")
@click.option("--input", "inputs", multiple=True, metavar="NAME",
              help="An input var of the exported model (a var the fetches depend on; gradc info lists a program's "
                   "inputs). Repeatable, in order; none for a model that takes no input (a sampler drawing its own "
                   "noise). NAME=NEW gives it the name Paddle's Predictor is to see.")
@click.option("--feed", "old_feeds", multiple=True, metavar="NAME", hidden=True,
              help="The old spelling of --input (elsewhere --feed is an .npz of values).")
@click.option("--fetch", "fetches", multiple=True, required=True, metavar="NAME",
              help="An output var of the model. Repeatable, in order. NAME=NEW renames it, as --input.")
@click.option("--params", type=click.Path(), multiple=True, help="The trained values: .npz (gradc train "
              "--save-params), .pdiparams, .pdparams. Repeatable: a later file's value wins.")
@click.option("--startup", "startups", multiple=True, type=click.Path(),
              help="Initialiser programs run first (values --params does not give). Repeatable.")
@click.option("--format", "fmt", type=click.Choice(["pb", "pir"]),
              help="pb: a legacy ProgramDesc (.pdmodel); pir: Paddle 3's PIR JSON (.json). Default: pir when OUTPUT "
                   "ends in .json, else pb.")
@STRICT_PARAMS
def export_command(program, output, inputs, old_feeds, fetches, params, startups, fmt, strict_params):
    """Export a (training) program for inference as Paddle's save_inference_model does: pruned to what the
    fetches need from the inputs, without backward and optimizer ops, dropout and batch norm in test mode, feed
    and fetch ops in Paddle's layout, and the parameters it reads."""
    feeds = _inputs(inputs, old_feeds)
    prog = load(program, lazy=False)
    rename = {}
    feeds, fetches = _renamed(prog, feeds, rename), _renamed(prog, fetches, rename)
    prefix = str(Path(output).with_suffix("")) if Path(output).suffix in (".pdmodel", ".json", ".pdiparams") else output
    fmt = fmt or ("pir" if Path(output).suffix == ".json" else "pb")
    scope = Scope()
    scope.vars.update(initialised_values(startups))
    scope.vars.update(read_files(params, prog, strict_params, startups))   # a later file's value wins
    model_path, params_path = export(prog, prefix, feeds, fetches, scope=scope, format=fmt, rename=rename)
    if not params:   # said once the export is written, so that a refusal stays the one line
        warnings.warn("no --params: the export holds the values the startup programs initialise, an untrained model "
                      "(gradc train --save-params writes the trained ones)", GradcWarning, stacklevel=1)
    seen = [(name, rename.get(name, name)) for name in feeds], [(name, rename.get(name, name)) for name in fetches]
    inputs, outputs = (", ".join(new if new == old else f"{old} as {new}" for old, new in names) for names in seen)
    click.echo(f"wrote {model_path} (inputs {inputs or 'none: a sampler'}; fetches {outputs}) and {params_path}")
