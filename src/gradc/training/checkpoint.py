"""Checkpoints of a training run in one directory: every persistable value (parameters, optimizer
accumulators, learning rate and step counters, batch-norm statistics) and where the run stands (epoch, batch,
step, and the settings that decide what comes next). Each checkpoint is two files written atomically and durably
(fsync), the arrays first: a checkpoint exists once its state file does, and the state file holds the arrays'
sha256, so a damaged or swapped arrays file is refused. The newest KEEP are kept."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from pathlib import Path

import numpy as np

from ..errors import FormatError, GradcError, OutputError
from ..io import write_atomic
from ..io.arrays import read_npz
from ..ir import VarType
from .params import checked_param

FORMAT = "gradc checkpoint 1"
KEEP = 2
_STATE = re.compile(r"checkpoint-(\d{8,})\.json$")


def checkpoint_directory(directory: str | Path) -> Path:
    """The checkpoint directory, made if need be: called before the first step too, so that a path that is a file
    or cannot be written is said before an epoch's work, not after it."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise OutputError(f"cannot keep checkpoints in '{directory}': it is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the checkpoint directory '{directory}': {exc.strerror}") from None
    if not os.access(directory, os.W_OK):
        raise OutputError(f"cannot keep checkpoints in '{directory}': the directory is not writable")
    return directory


def save_checkpoint(directory: str | Path, values: dict[str, np.ndarray], state: dict) -> Path:
    """Write checkpoint number ``state['step']``; return its state file."""
    directory = checkpoint_directory(directory)
    stem = f"checkpoint-{state['step']:08d}"
    buffer = io.BytesIO()
    np.savez(buffer, **values)
    arrays = buffer.getvalue()
    write_atomic(directory / f"{stem}.npz", arrays, durable=True)
    path = directory / f"{stem}.json"
    state = {"format": FORMAT, **state, "arrays_sha256": hashlib.sha256(arrays).hexdigest()}
    write_atomic(path, (json.dumps(state, indent=1) + "\n").encode(), durable=True)
    for old in _states(directory)[:-KEEP]:
        old.with_suffix(".npz").unlink(missing_ok=True)
        old.unlink(missing_ok=True)
    return path


def load_checkpoint(directory: str | Path) -> tuple[dict[str, np.ndarray], dict, Path]:
    """The newest checkpoint of ``directory``: (values, state, its state file)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise GradcError(f"cannot resume from '{directory}': no such directory")
    states = _states(directory)
    if not states:
        raise GradcError(f"cannot resume from '{directory}': it holds no checkpoint (checkpoint-N.json)")
    path = states[-1]
    try:
        state = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"checkpoint '{path}' is not readable: {exc}") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise FormatError(f"checkpoint '{path}' is not a {FORMAT!r} state file")
    for key in ("epoch", "batch", "step"):
        if not isinstance(state.get(key), int) or state[key] < 0:
            raise FormatError(f"checkpoint '{path}': '{key}' must be a count >= 0")
    arrays = path.with_suffix(".npz")
    digest, actual = state.get("arrays_sha256"), _sha256(arrays)
    if digest is not None and actual is not None and actual != digest:
        raise FormatError(f"checkpoint '{path}': '{arrays.name}' is not the file written with it (its sha256 differs): "
                          f"damaged, or copied from another checkpoint")
    return read_npz(arrays, "checkpoint"), state, path


def _sha256(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None   # read_npz says what is wrong with it
    return digest.hexdigest()


def _states(directory: Path) -> list[Path]:
    found = [(int(match[1]), path) for path in directory.iterdir() if (match := _STATE.match(path.name))]
    return [path for _, path in sorted(found)]


def checked_checkpoint(program, values: dict[str, np.ndarray], path) -> dict[str, np.ndarray]:
    """A checkpoint of this program: a value for each persistable var block 0 reads, of its shape and dtype,
    and none for a var it does not have (another program's checkpoint)."""
    block = program.global_block
    read = {name for op in block.ops for name in op.input_names()}
    unknown = _telling_first(block, [name for name in values if block.find_var(name) is None])
    missing = _telling_first(block, [name for name in read - values.keys() if (var := block.find_var(name))
                                     is not None and var.persistable and var.type == VarType.DENSE_TENSOR])
    for names, what in ((unknown, "values for vars this program does not have"), (missing, "no value for")):
        if names:
            shown = ", ".join(names[:6]) + (f", ... ({len(names)} in all)" if len(names) > 6 else "")
            raise GradcError(f"cannot resume from {path}: it holds {what} {shown}; it was written by another "
                             f"program (resume with the program that wrote it)")
    try:
        return {name: checked_param(program, name, value, str(path.with_suffix(".npz")), hint=False)
                for name, value in values.items()}
    except GradcError as exc:
        raise GradcError(f"cannot resume from {path}: {exc}; it was written by another program") from None


def _telling_first(block, names: list[str]) -> list[str]:
    """Parameters first, names made up by gradc or Paddle ('@LR_DECAY_COUNTER@') last, each group sorted: the names
    an error shows first say best which model a checkpoint is of."""
    def key(name: str):
        var = block.find_var(name)
        return var is None or not var.is_parameter, "@" in name, name
    return sorted(names, key=key)


def check_settings(path, state: dict, settings: dict) -> None:
    """Refuse to resume a checkpoint made with other settings than ``settings`` (the resumed run's)."""
    saved = state.get("settings") or {}
    changed = [f"{key} {saved.get(key)!r} -> {settings.get(key)!r}" for key in [*settings, *saved.keys() - settings]
               if saved.get(key) != settings.get(key)]
    if changed:
        raise GradcError(f"cannot resume from {path}: it was made with other settings ({'; '.join(changed)}); "
                         f"a resumed run continues only the run that wrote it")
