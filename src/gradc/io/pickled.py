"""Paddle's pickled state files: ``.pdparams`` (parameters) and ``.pdopt`` (optimizer state), written by
paddle.save / paddle.static.save as a pickled dict of numpy arrays. A pickle can run any code when loaded,
so these are read by an unpickler that builds only numpy arrays, dicts, lists and scalars: any other class
or function named in the file is an error, never an import."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import numpy as np

from ..errors import FormatError
from ..limits import LIMITS
from .files import write_atomic

_ALLOWED = {
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "scalar"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("collections", "OrderedDict"),
    ("_codecs", "encode"),   # how protocol 2 spells bytes: str -> bytes, nothing more
}
STRUCTURED_NAMES = "StructuredToParameterName@@"   # dygraph state dicts: layer path -> parameter name


class _NumpyOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which is not a numpy array, dict, list or "
                                         f"scalar (gradc never loads other objects from a pickle)")
        return super().find_class(module, name)


def read_pickled(path: str | Path, what: str = "params") -> dict[str, np.ndarray]:
    """name -> array from a .pdparams / .pdopt file. A dygraph state dict's layer paths are mapped to the
    parameter names the program uses; entries that are not arrays (a scheduler's state) are left out."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > LIMITS.max_bytes:
            raise FormatError(f"cannot read {what} '{path}': {size:,} bytes is more than the limit of "
                              f"{LIMITS.max_bytes:,} (--max-memory)")
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read {what} '{path}': {exc.strerror or exc}") from None
    try:
        state = _NumpyOnly(io.BytesIO(data)).load()
    except Exception as exc:  # noqa: BLE001 - any failure of a hostile pickle is one line naming the file
        reason = exc if isinstance(exc, pickle.UnpicklingError) else f"not a readable pickle ({type(exc).__name__})"
        raise FormatError(f"cannot read {what} '{path}': {reason}") from None
    if not isinstance(state, dict):
        raise FormatError(f"{what} '{path}': holds a {type(state).__name__}, not a dict of named arrays")
    renames = state.get(STRUCTURED_NAMES)
    renames = renames if isinstance(renames, dict) else {}
    arrays = {}
    for key, value in state.items():
        if not isinstance(value, np.ndarray):
            continue
        if value.dtype.hasobject:
            raise FormatError(f"{what} '{path}', array '{key}': holds Python objects, which gradc never loads")
        arrays[str(renames.get(key, key))] = value
    if not arrays:
        raise FormatError(f"{what} '{path}': holds no arrays")
    return arrays


def write_pickled(path: str | Path, values: dict[str, np.ndarray]) -> None:
    """A .pdparams Paddle's paddle.load / paddle.static.load reads: a pickled dict of name -> numpy array."""
    state = {name: np.asarray(value, order="C") for name, value in values.items()}   # ascontiguousarray makes 0-d 1-d
    write_atomic(path, pickle.dumps(state, protocol=4))
