"""Reading and writing programs: binary .pb, text .pbtxt, .json, converted to and from the IR
(gradc.io.protobuf), and Paddle's combined parameter files (gradc.io.pdiparams).

Saving is byte-deterministic and atomic: the file appears complete or not at all.
"""

from __future__ import annotations

import os
from pathlib import Path

from google.protobuf import json_format, text_format
from google.protobuf.message import DecodeError

from ..errors import FormatError
from ..ir import Program
from ..proto import framework_pb2 as pb
from ..verify import check_structure
from .files import check_writable, write_atomic
from .protobuf import program_from_proto, program_to_proto

__all__ = ["check_writable", "detect_format", "load", "parse_program", "program_from_proto",
           "program_to_proto", "save", "serialize", "write_atomic"]

TEXT_SUFFIXES = {".pbtxt", ".prototxt", ".txt"}
JSON_SUFFIXES = {".json"}


def detect_format(path: str | os.PathLike, data: bytes | None = None) -> str:
    """'pb', 'pbtxt' or 'json': by extension, else by sniffing the bytes."""
    suffix = Path(path).suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return "pbtxt"
    if suffix in JSON_SUFFIXES:
        return "json"
    if data is not None and suffix not in {".pb", ".pdmodel", ".bin"}:
        head = data.lstrip()[:1]
        if head == b"{":
            return "json"
        if head[:1].isalpha() and _is_text(data):
            return "pbtxt"
    return "pb"


def _is_text(data: bytes) -> bool:
    try:
        data[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def parse_program(data: bytes, fmt: str = "pb", source: str = "<bytes>") -> Program:
    msg = pb.ProgramDesc()
    try:
        if fmt == "pb":
            msg.ParseFromString(data)
        elif fmt == "pbtxt":
            text_format.Parse(data.decode("utf-8"), msg)
        else:
            json_format.Parse(data.decode("utf-8"), msg)
    except (DecodeError, text_format.ParseError, json_format.ParseError, UnicodeDecodeError,
            ValueError, RuntimeError) as exc:
        raise FormatError(f"{source}: not a readable ProgramDesc: {_decode_reason(fmt, exc, len(data))}") from None
    if not msg.blocks:
        raise FormatError(f"{source}: not a ProgramDesc: it has no blocks "
                          f"({len(data)} bytes; truncated or not a program file?)")
    program = program_from_proto(msg)
    check_structure(program, source)
    return program


def _decode_reason(fmt: str, exc: Exception, size: int) -> str:
    if fmt == "pb":
        return f"the binary protobuf ({size} bytes) is truncated or corrupt"
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"invalid {'text format' if fmt == 'pbtxt' else 'JSON'}: {detail}"


def load(path: str | os.PathLike) -> Program:
    """Read a program from .pb (binary), .pbtxt (text) or .json."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read '{path}': {exc.strerror}") from None
    return parse_program(data, detect_format(path, data), str(path))


def serialize(program: Program, fmt: str = "pb") -> bytes:
    msg = program_to_proto(program)
    if fmt == "pb":
        return msg.SerializeToString(deterministic=True)
    if fmt == "pbtxt":
        return text_format.MessageToString(msg).encode("utf-8")
    return json_format.MessageToJson(msg, preserving_proto_field_name=True, indent=1).encode("utf-8") + b"\n"


def save(program: Program, path: str | os.PathLike, fmt: str | None = None) -> None:
    """Write a program, format chosen by extension (or ``fmt``); atomic: no half-written file."""
    write_atomic(path, serialize(program, fmt or detect_format(path)))
