"""Paddle 3 PIR programs (`model.json`): read them into gradc Programs of legacy ops, write them back.

    program = gradc.pir.load_pir("model.json")       # or bytes
    gradc.pir.save_pir(program, "out.json")

The modules that read and write PIR (and the op tables they build) are imported by the first program read or
written as PIR, so gradc.io can sniff a file's format without them.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import FormatError
from ..gcpause import gc_paused
from ..ir import Program

__all__ = ["is_pir", "load_pir", "parse_pir", "save_pir", "serialize_pir"]


def is_pir(data: bytes) -> bool:
    """Whether ``data`` looks like a PIR JSON file (a JSON object whose base_code names magic "pir")."""
    head = data[:4096].lstrip()
    return head[:1] == b"{" and b'"base_code"' in head and b'"pir"' in head


@gc_paused()   # as gradc.io's load and save: called directly, the collector's passes tripled a large program's time
def parse_pir(data: bytes, source: str = "<bytes>") -> Program:
    from .graph import release
    from .reader import read_module
    from .translate import to_program

    module = read_module(data, source)
    program = to_program(module, source)
    release(module)
    return program


def load_pir(path_or_bytes: str | os.PathLike | bytes) -> Program:
    """A PIR JSON program (a path or the file's bytes) as a gradc Program of legacy ops."""
    if isinstance(path_or_bytes, (bytes, bytearray)):
        return parse_pir(bytes(path_or_bytes))
    try:
        data = Path(path_or_bytes).read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read '{path_or_bytes}': {exc.strerror}") from None
    return parse_pir(data, str(path_or_bytes))


@gc_paused()
def serialize_pir(program: Program, fetch: list[str] | tuple = (), training_outputs: bool = True) -> bytes:
    """The PIR JSON of a Program of legacy ops; ``fetch`` adds pd_op.fetch ops for those vars, and
    ``training_outputs`` for a training program's loss and gradients."""
    from .dump import dumps
    from .export import to_module
    from .graph import release

    module = to_module(program, fetch, training_outputs)
    data = dumps(module)
    release(module)
    return data


def save_pir(program: Program, path: str | os.PathLike, fetch: list[str] | tuple = (),
             training_outputs: bool = True) -> None:
    """Write ``program`` as a PIR JSON file Paddle 3 loads (atomic: the whole file or nothing)."""
    from ..io import write_atomic  # here, not at the top: gradc.io imports gradc.pir to sniff and load PIR files
    write_atomic(path, serialize_pir(program, fetch, training_outputs))
