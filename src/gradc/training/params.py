"""Parameters in and out of a Scope in one call, in any of the formats users have: an .npz of name -> array,
Paddle's combined .pdiparams (save_inference_model), or its pickled .pdparams / .pdopt (paddle.save).

    gradc.load_params(scope, "params.npz", program)      # every value checked against the var it fills
    gradc.save_params(scope, "model.pdiparams", program) # the model's parameters (no optimizer state)
    gradc.save_params(scope, "model.pdopt", program)     # the optimizer's state, as paddle.static.save writes it
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ExecutionError, FeedError, FormatError, GradcError, GradcNotice, GradcWarning, ProgramError
from ..executor import Executor, Scope
from ..executor.declared import fitted_value, int8_stored, read_by, scope_reads, stale_shapes
from ..io import load, write_atomic
from ..io.arrays import read_npz
from ..io.pdiparams import persistable_names, read_params, read_separate, write_params
from ..io.pickled import read_pickled, write_pickled
from ..ir import Program
from ..rnn_flat import program_flat_buffers
from .param_sets import holding_program, model_params, optimizer_state

PICKLED = (".pdparams", ".pdopt")


def read_values(path: str | os.PathLike, program: Program | None = None, strict: bool = False,
                check: bool = True) -> dict[str, np.ndarray]:
    """name -> array from a parameter file, each checked against the var ``program`` declares (unless not
    ``check``: read_files checks the values that win). A .pdiparams
    names nothing itself: it is read in the order of the program's persistable vars, or of its forward part's
    (what save_params and Paddle's save_inference_model write). Values for names the program has no var of are
    kept with a GradcWarning naming them, or refused when ``strict`` (another model's file, a renamed layer)."""
    path = str(path)
    if Path(path).is_dir():
        if program is None:
            raise GradcError(f"'{path}': a directory of parameter files is read against the program it belongs to")
        values = read_separate(path, program)
    elif path.endswith(".pdiparams") or _paddle_combined(path):
        if program is None:
            raise GradcError(f"'{path}': a .pdiparams file is read against the program it belongs to")
        values = _read_combined(path, program)
    elif path.endswith(PICKLED):
        values = read_pickled(path, "params")
    else:
        _refuse_what_is_not_params(path)
        values = read_npz(path, "params")
    if program is not None:
        _unknown_names(program, values, path, strict)
        if check:
            values = {name: checked_param(program, name, value, path) for name, value in values.items()}
    return values


def read_files(paths: Sequence[str | os.PathLike], program: Program, strict: bool = False,
               startups: Sequence = ()) -> dict[str, np.ndarray]:
    """name -> array from several parameter files, a later file's value for a name winning; only the winning value
    must fit its var (a probe's head file given after the trained tower's, whose same-named layer has another shape).
    ``startups``: the startup programs run too; a parameter the files leave out and they initialise is named in a
    note."""
    values, sources = {}, {}
    for path in paths:
        for name, value in read_values(path, program, strict, check=False).items():
            values[name], sources[name] = value, path
    if startups and paths:
        _note_initialised(program, values, paths, startups)
    return {name: checked_param(program, name, value, sources[name]) for name, value in values.items()}


def _note_initialised(program: Program, values: dict, paths: Sequence[str | os.PathLike], startups) -> None:
    """The parameters block 0 reads that no file gives keep the startup programs' random initial values: a federated
    client's file that lost one would train and average a freshly drawn layer, unsaid."""
    block, programs = program.global_block, [s if isinstance(s, Program) else load(s, lazy=False) for s in startups]
    read = [name for name in scope_reads(block) if (var := block.find_var(name)) is not None and var.is_parameter]
    initialised = {name for startup in programs for op in startup.global_block.ops for name in op.output_names()}
    left = [name for name in read if name not in values and name in initialised]   # the others: require_values
    if left:
        named, shown = "', '".join(map(str, paths)), ", ".join(left[:8]) + (f", ... ({len(left)} in all)"
                                                                             if len(left) > 8 else "")
        warnings.warn(f"params '{named}': {len(left)} of the {len(read)} parameters the program "
                      f"reads are in none of the files ({shown}): they start from the startup programs' initial "
                      f"values", GradcNotice, stacklevel=3)


def _paddle_combined(path: str) -> bool:
    """Paddle's combined parameters under another name (Paddle 1.x's `__params__` or `params`): the file starts as
    each of its tensors does, with a uint32 version 0, where an .npz starts with 'PK' and a program otherwise."""
    if path.endswith((".npz", *PICKLED)):
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == bytes(4)
    except OSError:
        return False


def _refuse_what_is_not_params(path: str) -> None:
    """A program or Paddle's .pdiparams.info given as --params: say so, instead of 'not an .npz archive'."""
    name, saved = Path(path).name, Path(path).with_suffix("") if Path(path).suffix == ".pdmodel" else Path(path)
    pair = [f"{saved}{suffix}" for suffix in PICKLED if Path(f"{saved}{suffix}").exists()]
    if pair and (not Path(path).exists() or Path(path).suffix == ".pdmodel"):   # paddle.static.save's prefix
        raise FormatError(f"cannot read params '{path}': paddle.static.save's values are in {' and '.join(pair)}: "
                          f"give each to gradc.load_params (--params takes the .pdparams)")
    if name.endswith(".pdiparams.info"):
        raise FormatError(f"cannot read params '{path}': Paddle's .pdiparams.info holds no values (give the .pdiparams "
                          f"file beside it)")
    if name == "__model__" or Path(path).suffix in (".json", ".pdmodel", ".pb", ".pbtxt", ".pbjson"):
        raise FormatError(f"cannot read params '{path}': it is a program file, not parameters (paddle.jit.save and "
                          f"save_inference_model write the values beside it, in a .pdiparams file)")


def _unknown_names(program: Program, values: dict, path: str, strict: bool) -> None:
    unknown = sorted(name for name in values if program.global_block.find_var(name) is None)
    if not unknown:
        return
    shown = ", ".join(unknown[:8]) + (f", ... ({len(unknown)} in all)" if len(unknown) > 8 else "")
    what = f"params '{path}': {len(unknown)} of its {len(values)} values name no var of the program ({shown})"
    if strict:
        raise FormatError(f"{what}: is it another model's file? (without --strict-params, strict=True in Python, "
                          f"the rest loads with a warning)")
    warnings.warn(f"{what}; the program does not use them (--strict-params, strict=True in Python, refuses such a "
                  f"file)", GradcWarning, stacklevel=3)


def _read_combined(path: str, program: Program) -> dict[str, np.ndarray]:
    try:
        return read_params(path, program)
    except FormatError as whole_program:
        from .programs import forward_part  # and the backward's and optimizers' roles: only for this retry
        try:
            forward = forward_part(program)
        except GradcError:
            raise whole_program from None
        # what save_params writes: the forward part's persistables, with or without the parameters training ops read
        tried = [persistable_names(program)]
        for names in (persistable_names(forward), sorted(model_params(program, forward))):
            if names in tried:
                continue
            tried.append(names)
            try:
                return read_params(path, holding_program(program, forward, names))
            except FormatError:
                pass
        raise whole_program from None


def checked_param(program: Program, name: str, value, source: str, hint: bool = True):
    """A parameter value must fit the var the program declares: shape (-1 fits any size, and a shape Paddle's passes
    leave stale any) and dtype; a refusal names the op that reads it first (and, with ``hint``, how to convert it)."""
    block = program.global_block
    var = block.find_var(name)
    return value if var is None else fitted_value(var, value, f"params '{source}': {read_by(block, name)}", hint=hint,
                                                  shape=name not in stale_shapes(block),
                                                  int8=name in int8_stored(block))


def require_values(program: Program, scope, fed=(), params: Sequence[str | os.PathLike] = (),
                   path: str | None = None) -> None:
    """Refuse, all at once, the persistable tensors block 0 reads before any op writes them that neither ``scope``
    (parameters loaded, startup programs run) nor the feed holds: a run would stop at the first of them. ``params``:
    the parameter files given; ``path``: the program's file, beside which gradc compile --optimizer wrote the startup
    program of its optimizer."""
    block = program.global_block
    missing = [name for name in scope_reads(block) if name not in fed and scope.find(name) is None]
    if missing:
        shown = ", ".join(missing[:8]) + (f", ... ({len(missing)} in all)" if len(missing) > 8 else "")
        named = "', '".join(map(str, params))
        where = f"not in params '{named}'; " if params else ""
        from .programs import updates_nothing  # as in _read_combined: only for this hint
        hint, saved = "", path and Path(path).with_suffix(".pdiparams")
        # optimizer state or a schedule's (an inference model marks no parameters: its statistics are not those)
        if not all(block.find_var(name).is_parameter for name in missing) and updates_nothing(program) is None:
            beside = path and Path(path).with_suffix(".startup" + Path(path).suffix)
            hint = (f"; {beside} initialises the optimizer's" if beside and beside.exists() else
                    "; gradc compile --optimizer writes OUTPUT.startup.pb for the optimizer's")
        elif saved and saved.exists() and saved.resolve() not in {Path(given).resolve() for given in params}:
            hint = f"; {saved}, beside the program, may be its parameters"
        raise GradcError(f"no value for the persistable var(s) {shown}: {where}give them with --params, or run the "
                         f"startup programs that initialise them first (--startup, repeatable{hint})")


def run_startup(executor, startup, scope) -> None:
    """Run an initialiser program (a Program or a path) into ``scope``; a failure names the file, so that a program
    given as --startup by mistake (a forward program, which reads inputs) is not taken for the main one's."""
    try:
        executor.run(startup if isinstance(startup, Program) else load(startup, lazy=False), scope=scope)
    except (ExecutionError, ProgramError) as exc:
        if isinstance(startup, Program):
            raise
        kind = ProgramError if isinstance(exc, ProgramError) else ExecutionError   # not a FeedError: no feed file
        hint = ("; an initialiser that reads the data (actnorm's) runs on the first batch given to gradc train as "
                "--data-init" if isinstance(exc, FeedError) else "")
        raise kind(f"startup program '{startup}': {exc}{hint}") from None


def initialised_values(startups) -> dict:
    """name -> value of what the startup programs initialise (a forward program and its startup, no params file)."""
    scope, executor = Scope(), Executor()
    for startup in startups:
        run_startup(executor, startup, scope)
    return dict(scope.vars)


def load_params(scope, path: str | os.PathLike | Sequence[str | os.PathLike], program: Program | None = None,
                strict: bool = False) -> list[str]:
    """Put the values of a parameter file, or of several (read_files: a later file's value wins), into ``scope``;
    return their names (read_values: ``strict``)."""
    several = isinstance(path, (list, tuple)) and program is not None
    values = read_files(path, program, strict) if several else read_values(path, program, strict)
    for name, value in values.items():
        scope[name] = value
    return sorted(values)


def save_params(scope, path: str | os.PathLike, program: Program, names: list[str] | None = None) -> list[str]:
    """Write the model's parameters (by default the persistable vars of the program's forward part: weights and
    batch-norm statistics, no optimizer state; and the parameters only training ops read) from ``scope``, in the
    format the extension says; to a .pdopt, the optimizer's state instead, as paddle.static.save splits a program's
    persistables."""
    from .programs import forward_part
    check_params_path(path)
    forward = forward_part(program)
    suffix = Path(path).suffix
    buffers = program_flat_buffers(program)
    if names is None:
        names = optimizer_state(program, forward) if suffix == ".pdopt" else model_params(program, forward)
        # paddle.static.load refuses a .pdparams without an RNN's flat buffer; an inference model has none
        names += [] if suffix in (".pdopt", ".pdiparams") else [name for name in buffers if name not in names]
    names = sorted(names)
    missing = [name for name in names for needed in buffers.get(name, [name]) if needed not in scope]
    if missing:
        raise GradcError(f"cannot save parameters: the scope has no value for {', '.join(missing)} "
                         f"(run the startup program or load parameters first)")
    values = {name: rebuilt_buffer(scope, buffers[name]) if name in buffers else np.asarray(scope[name])
              for name in names}
    if suffix == ".pdiparams":
        write_params(path, holding_program(program, forward, names), values)
    elif suffix in PICKLED:
        write_pickled(path, values)
    else:
        buffer = io.BytesIO()
        np.savez(buffer, **values)
        write_atomic(path, buffer.getvalue())
    return names


def refresh_flat_buffers(scope, buffers: dict[str, list[str]]) -> None:
    """Each RNN flat buffer in ``scope`` rebuilt from its cells (rnn_flat.program_flat_buffers), as Paddle's, sharing
    their memory, holds them after every step: what a checkpoint or the caller's scope then reads."""
    for buffer, cells in buffers.items():
        scope.assign(buffer, rebuilt_buffer(scope, cells))


def rebuilt_buffer(scope, cells: list[str]) -> np.ndarray:
    """An RNN's flat buffer as Paddle's shared memory holds it after training: its cells' current values, in order
    (the scope's own copy is the startup's, which no gradc op updates)."""
    dtype = np.asarray(scope[cells[0]]).dtype
    return np.concatenate([np.asarray(scope[cell], dtype).ravel() for cell in cells])


def check_params_path(path: str | os.PathLike) -> None:
    """A parameter file is written in the format its extension names: another extension is refused (before
    training, on the command line) rather than given an .npz under a name that says otherwise."""
    if Path(path).suffix not in (".npz", ".pdiparams", *PICKLED):
        raise GradcError(f"cannot tell the format of '{path}' from its extension: use .npz, .pdiparams or .pdparams "
                         f"(or .pdopt, for the optimizer's state)")
