"""Export for inference, as Paddle's save_inference_model writes it: the program pruned to what the fetches
need from the feeds, without backward (but for a fetched derivative's), optimizer or learning-rate ops, in test
mode (dropout keeps every unit, batch norm uses its running statistics), with feed ops reading the `feed` holder
(column i for feed i) first and fetch ops writing the `fetch` holder last; beside it the parameters the pruned
program reads, sorted by name, in Paddle's combined format. ``paddle.static.load_inference_model(prefix,
executor)`` loads the pair.

    export(program, "model", feeds=["img"], fetches=["softmax_0.tmp_0"], scope=scope)
    # -> model.pdmodel + model.pdiparams   (format="pir": model.json, Paddle 3's default)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import GradcError, OutputError
from ..io import check_writable, save
from ..io.pdiparams import persistable_names, write_params
from ..ir import AttrType, OpDesc, Program, VarType, roles
from .programs import forward_part, prune

SUFFIXES = {"pb": ".pdmodel", "pir": ".json"}


def inference_program(program: Program, feeds: Sequence[str], fetches: Sequence[str],
                      rename: Mapping[str, str] | None = None) -> Program:
    """The program save_inference_model would write for these feeds and fetches; ``rename`` gives some of them
    the names Paddle's Predictor is to see (get_input_names, get_output_names)."""
    if not fetches:
        raise GradcError("export needs at least one fetch var (the model's output)")
    model = prune(forward_part(program, derivatives_of=fetches), list(fetches), feeds)
    if rename:
        _rename(model, dict(rename), feeds, fetches)
        feeds, fetches = [rename.get(n, n) for n in feeds], [rename.get(n, n) for n in fetches]
    block = model.global_block
    for name in feeds:
        block.var(name).need_check_feed = True
    block.create_var("feed", None, None, type=VarType.FEED_MINIBATCH, persistable=True)
    block.create_var("fetch", None, None, type=VarType.FETCH_LIST, persistable=True)
    feed_ops = [_holder_op("feed", "feed", name, col) for col, name in enumerate(feeds)]
    fetch_ops = [_holder_op("fetch", name, "fetch", col) for col, name in enumerate(fetches)]
    block.ops = feed_ops[::-1] + block.ops + fetch_ops   # Paddle prepends the feed ops one by one
    model.mark_changed()
    return model


def _rename(model: Program, rename: dict[str, str], feeds: list[str], fetches: list[str]) -> None:
    """Give inputs and outputs of the pruned model new names, in every op and var that has them."""
    taken, ends = {name for block in model.blocks for name in block.vars}, {*feeds, *fetches}
    for old, new in rename.items():
        if old in fetches and new in feeds and new not in rename:   # a decoding step's next state, named as its input
            raise GradcError(f"export: cannot rename the fetch '{old}' to '{new}': '{new}' is an input of the model, "
                             f"and a model's var has one name (name the fetch otherwise, --fetch {old}={new}_next, "
                             f"and store it as the next step's input with gradc run --fetch {new}_next={new})")
        if old not in ends:
            raise GradcError(f"export: cannot rename '{old}': only an input or a fetch is renamed "
                             f"(inputs and fetches: {', '.join(sorted(ends))})")
        if getattr(model.global_block.find_var(old), "persistable", False):
            raise GradcError(f"export: cannot rename '{old}': it is a parameter, which the .pdiparams file "
                             f"holds under its name")
        if not new or (new in taken and new not in rename):
            raise GradcError(f"export: cannot rename '{old}' to '{new}': "
                             + ("the new name is empty" if not new else "the model has a var of that name"))
    for block in model.blocks:
        for op in block.ops:
            op.rename_reads(rename)
            op.outputs = {slot: [rename.get(a, a) for a in args] for slot, args in op.outputs.items()}
        for var in block.vars.values():
            var.name = rename.get(var.name, var.name)
        block.vars = {var.name: var for var in block.vars.values()}   # at once: a swap of two names is a rename


def _make_folder(folder: str) -> None:
    """The prefix's directory, made if missing, as Paddle's save_inference_model and jit.save make it."""
    if not folder or os.path.isdir(folder):
        return
    try:
        os.makedirs(folder, exist_ok=True)
    except FileExistsError:
        raise OutputError(f"cannot export into '{folder}': a file of that name is on the path") from None
    except OSError as error:
        raise OutputError(f"cannot make the directory '{folder}' to export into: {error.strerror}") from None


def _holder_op(kind: str, source: str, target: str, col: int) -> OpDesc:
    op = OpDesc(kind, {"X": [source]}, {"Out": [target]}, {"col": col}, {"col": AttrType.INT})
    roles.set_role(op, roles.FORWARD)
    return op


def export(program: Program, prefix: str | os.PathLike, feeds: Sequence[str], fetches: Sequence[str],
           scope=None, values: Mapping[str, np.ndarray] | None = None, format: str = "pb",
           rename: Mapping[str, str] | None = None) -> tuple[str, str]:
    """Write ``prefix``.pdmodel (or .json with format="pir") and ``prefix``.pdiparams; the parameter values come
    from ``values`` or ``scope``; ``rename`` maps input and fetch names to the ones Paddle is to see (a parameter
    keeps its name). Returns the two paths."""
    if format not in SUFFIXES:
        raise GradcError(f"unknown export format '{format}' (known: {', '.join(SUFFIXES)})")
    if os.path.isdir(prefix) or str(prefix).endswith(os.sep):   # as Paddle's save_inference_model refuses it
        example = os.path.join(prefix, "model")
        raise OutputError(f"cannot export to '{prefix}': it names a directory, and the path is the prefix of the "
                          f"files: '{example}' writes {example}{SUFFIXES[format]} and {example}.pdiparams")
    model_path, params_path = f"{prefix}{SUFFIXES[format]}", f"{prefix}.pdiparams"
    folder = os.path.dirname(model_path)
    for path in (model_path, params_path) if os.path.isdir(folder or ".") else ():
        check_writable(path)   # before the work; a folder still to be made is checked once made
    model = inference_program(program, list(feeds), list(fetches), rename)
    source = values if values is not None else scope
    names = persistable_names(model)
    missing = [name for name in names if source is None or name not in source]
    if missing:
        shown = ", ".join(missing[:6]) + (f", ... ({len(missing)} in all)" if len(missing) > 6 else "")
        raise GradcError(f"export: no value for {shown} (give the trained parameters: --params FILE, "
                         f"which gradc train --save-params writes; scope= or values= in Python)")
    arrays = {name: np.asarray(source[name]) for name in names}
    _make_folder(folder)
    if format == "pir":
        from ..pir import save_pir
        save_pir(model, model_path, training_outputs=False)   # its outputs are the fetches asked for
    else:
        save(model, model_path, "pb")
    write_params(params_path, model, arrays)
    return model_path, params_path
