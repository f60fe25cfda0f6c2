"""Paddle's combined parameter files (`.pdiparams`, written by save_inference_model / save_combine):
the program's persistable vars, sorted by name, each as a serialized dense tensor:

    uint32 version (0) | uint64 lod levels, each uint64 byte size + offsets | uint32 version (0)
    | int32 size + VarType.TensorDesc protobuf | the raw data, C order
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np

from ..bfloat16 import from_bits, to_bits
from ..errors import FormatError
from ..float8 import FORMATS as FLOAT8_FORMATS
from ..float8 import from_bits as float8_from_bits
from ..float8 import to_bits as float8_to_bits
from ..ir import Program, VarType
from ..ir.types import DTYPE_BY_NUMPY_NAME, NUMPY_DTYPE_NAMES
from .files import write_atomic
from .plain_decode import tensor_desc
from .wire_values import tensor_desc_bytes

_HOLDERS = {VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.STEP_SCOPES}


def persistable_names(program: Program) -> list[str]:
    """The vars a combined parameter file holds, in its order."""
    return sorted(name for block in program.blocks for name, var in block.vars.items()
                  if var.persistable and var.type not in _HOLDERS)


def read_params(path: str | Path, program: Program) -> dict[str, np.ndarray]:
    names = persistable_names(program)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read '{path}': {exc.strerror}") from None
    reader = _Reader(data, str(path))
    values = {}
    for count, name in enumerate(names):
        if reader.offset == len(data):   # the end, at a var's start: no tensor was cut, the file has fewer
            raise FormatError(f"{path}: holds {count} values, but the program has {len(names)} persistable vars "
                              f"('{name}' is the first without one): the file belongs to another program")
        values[name] = reader.tensor(name)
    if reader.offset != len(data):
        raise FormatError(f"{path}: {len(data) - reader.offset} bytes left after the program's {len(names)} "
                          f"persistable vars: the file belongs to another program")
    return values


def read_separate(directory: str | Path, program: Program) -> dict[str, np.ndarray]:
    """A directory of one file per persistable var, named after it, each one tensor as in a combined file (Paddle
    1.x's save_inference_model without params_filename, paddle.static.save_vars). Vars without a file are left to
    the caller (a training program's optimizer state comes from its startup program)."""
    directory, values = Path(directory), {}
    present = [name for name in persistable_names(program) if (directory / name).is_file()]
    if not present:
        raise FormatError(f"params '{directory}': no file in the directory is named after a persistable var of the "
                          f"program (Paddle 1.x writes one per var): it belongs to another program")
    for name in present:
        try:
            data = (directory / name).read_bytes()
        except OSError as exc:
            raise FormatError(f"cannot read '{directory / name}': {exc.strerror}") from None
        reader = _Reader(data, str(directory / name))
        values[name] = reader.tensor(name)
        if reader.offset != len(data):
            raise FormatError(f"{directory / name}: {len(data) - reader.offset} bytes left after its tensor")
    return values


def write_params(path: str | Path, program: Program, values: dict[str, np.ndarray]) -> None:
    chunks = []
    for name in persistable_names(program):
        if name not in values:
            raise FormatError(f"no value for persistable var '{name}'")
        array = np.ascontiguousarray(values[name])
        declared = _declared(program, name)
        if declared == VarType.BF16:   # as Paddle writes it: two bytes a value
            array, data_type = to_bits(array), VarType.BF16
        elif declared in FLOAT8_FORMATS:   # one byte a value, data type 32 / 33
            array, data_type = float8_to_bits(array, declared), declared
        else:
            data_type = DTYPE_BY_NUMPY_NAME[array.dtype.name]
        raw = tensor_desc_bytes(data_type, array.shape)
        chunks += [struct.pack("<IQIi", 0, 0, 0, len(raw)), raw, array.tobytes()]
    write_atomic(path, b"".join(chunks))


def _declared(program: Program, name: str) -> int | None:
    var = program.global_block.find_var(name)
    return None if var is None else var.dtype


def _parsed_tensor_desc(raw: bytes, source: str, var: str) -> tuple[int, tuple[int, ...]]:
    """(data type, dims) of a TensorDesc: decoded plainly, or by protobuf (imported only then), which refuses
    what is corrupt."""
    plain = tensor_desc(raw)
    if plain is not None:
        return plain
    from ..proto import framework_pb2
    desc = framework_pb2.VarType.TensorDesc()
    try:
        desc.ParseFromString(raw)
    except Exception:
        raise FormatError(f"{source}: the tensor description of '{var}' is corrupt") from None
    return desc.data_type, tuple(desc.dims)


class _Reader:
    def __init__(self, data: bytes, source: str):
        self.data, self.source, self.offset = data, source, 0

    def take(self, size: int, what: str, var: str) -> bytes:
        end = self.offset + size
        if size < 0 or end > len(self.data):
            raise FormatError(f"{self.source}: truncated in the {what} of '{var}' (byte {self.offset} of "
                              f"{len(self.data)})")
        chunk, self.offset = self.data[self.offset:end], end
        return chunk

    def unpack(self, fmt: str, what: str, var: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what, var))[0]

    def tensor(self, var: str) -> np.ndarray:
        if self.unpack("<I", "version", var) != 0:
            raise FormatError(f"{self.source}: '{var}' has an unknown tensor version")
        for _ in range(self.unpack("<Q", "lod level count", var)):
            self.take(self.unpack("<Q", "lod size", var), "lod", var)
        self.unpack("<I", "version", var)
        raw_desc = self.take(self.unpack("<i", "desc size", var), "desc", var)
        data_type, shape = _parsed_tensor_desc(raw_desc, self.source, var)
        # bfloat16 and float8 bits
        dtype = {VarType.BF16: "uint16", **dict.fromkeys(FLOAT8_FORMATS, "uint8")}.get(data_type) \
            or NUMPY_DTYPE_NAMES.get(data_type)
        if dtype is None:
            raise FormatError(f"{self.source}: '{var}' has data type {data_type}, which gradc cannot read")
        if any(d < 0 for d in shape):
            raise FormatError(f"{self.source}: '{var}' has a negative dim in its shape {list(shape)}")
        count = math.prod(shape)   # a Python int: huge dims are caught by take(), not overflowed
        raw = self.take(count * np.dtype(dtype).itemsize, "data", var)
        array = np.frombuffer(raw, dtype=dtype).reshape(shape)
        if data_type in FLOAT8_FORMATS:
            return float8_from_bits(array, data_type)
        return from_bits(array) if data_type == VarType.BF16 else array.copy()
