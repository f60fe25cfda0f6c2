"""Reading and writing programs: binary .pb, text .pbtxt, protobuf JSON (.pbjson) converted to and from
the IR (gradc.io.protobuf), Paddle 3's PIR JSON (.json, gradc.pir), and Paddle's combined parameter
files (gradc.io.pdiparams). Reading sniffs the bytes, so a .json file may hold either JSON form.

Saving is byte-deterministic and atomic: the file appears complete or not at all.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from ..errors import FormatError
from ..gcpause import gc_paused
from ..ir import Program
from ..pir import is_pir, parse_pir, serialize_pir
from ..verify import check_structure
from .fast_read import read_program
from .files import STDIO, check_writable, is_stdout, write_atomic
from .lazy_read import read_lazily
from .wire import encode_program

__all__ = ["STDIO", "check_writable", "is_stdout", "detect_format", "load", "parse_program", "program_from_proto",
           "program_to_proto", "save", "serialize", "write_atomic"]

TEXT_SUFFIXES = {".pbtxt", ".prototxt", ".txt"}
FORMATS = ("pb", "pbtxt", "json", "pir")   # json: ProgramDesc as protobuf JSON; pir: Paddle 3's PIR JSON


def detect_format(path: str | os.PathLike, data: bytes | None = None) -> str:
    """One of FORMATS: for a file's bytes by sniffing them (and the extension), for a file to write by its
    extension: .json is Paddle 3's PIR JSON (what Paddle saves by default), .pbjson protobuf JSON."""
    suffix = Path(path).suffix.lower()
    if data is None:
        return _output_format(path, suffix)
    if suffix in TEXT_SUFFIXES:
        return "pbtxt"
    if data.lstrip()[:1] == b"{":   # JSON whatever the name says (a PIR model.json renamed .pdmodel)
        return "pir" if is_pir(data) or b'"base_code"' in data[:4096] else "json"
    if suffix in {".json", ".pbjson"}:   # not an object: said as JSON, not as a corrupt binary protobuf
        return "json"
    if suffix in {".pb", ".pdmodel", ".bin"}:
        return "pb"
    if data.lstrip()[:1].isalpha() and _is_text(data):
        return "pbtxt"
    return "pb"


def _output_format(path, suffix: str) -> str:
    """A file to write: its extension says the format; none means binary; another one is a mistake."""
    known = {".json": "pir", ".pbjson": "json", **dict.fromkeys(TEXT_SUFFIXES, "pbtxt"),
             **dict.fromkeys(("", ".pb", ".pdmodel", ".bin", ".model"), "pb")}
    if suffix not in known:
        raise FormatError(f"cannot tell the format of '{path}' from its extension: use .pb (binary), .pbtxt (text), "
                          f".pbjson (protobuf JSON) or .json (Paddle 3's PIR JSON), or give the format")
    return known[suffix]


def _is_text(data: bytes) -> bool:
    try:
        data[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@gc_paused(keeps=True)
def parse_program(data: bytes, fmt: str = "pb", source: str = "<bytes>", *, lazy: bool = True) -> Program:
    """The program in ``data``. ``lazy``: a binary program's blocks are read, and checked, on first use
    (gradc.io.lazy_read), so that a fault inside a block is raised there; else all at once, as the command line does."""
    if fmt == "pir":
        return parse_pir(data, source)
    if fmt == "pb" and lazy:
        program = read_lazily(data, source, lambda: _parse_message(data, fmt, source))
        if program is not None:
            return program
    program = read_program(data) if fmt == "pb" else None   # None: protobuf parses it, and names any fault
    if program is not None:
        check_structure(program, source)
        return program
    return _parse_message(data, fmt, source)


def _parse_message(data: bytes, fmt: str, source: str) -> Program:
    """The program in ``data``, parsed by protobuf, which names the fault of bytes it refuses."""
    # protobuf is imported here: a plain binary program is read without it (its runtime is a fifth of start-up)
    from google.protobuf.message import DecodeError

    from ..proto import framework_pb2 as pb
    from .protobuf import program_from_proto
    msg = pb.ProgramDesc()
    text_errors = ()
    if fmt != "pb":
        from google.protobuf import json_format, text_format
        text_errors = (text_format.ParseError, json_format.ParseError)
    if fmt == "json":
        _json_object(data, source)
    try:
        if fmt == "pb":
            msg.ParseFromString(data)
        elif fmt == "pbtxt":
            text_format.Parse(data.decode("utf-8"), msg)
        else:
            json_format.Parse(data.decode("utf-8"), msg)
    except (DecodeError, UnicodeDecodeError, ValueError, RuntimeError, *text_errors) as exc:
        raise FormatError(f"{source}: not a readable ProgramDesc: {_decode_reason(fmt, exc, len(data))}") from None
    if not msg.blocks and fmt == "json":
        raise FormatError(f"{source}: not a program: a JSON object with neither the base_code and program of Paddle "
                          f"3's PIR JSON nor the blocks of a ProgramDesc")
    if not msg.blocks:
        raise FormatError(f"{source}: not a ProgramDesc: it has no blocks "
                          f"({len(data)} bytes; truncated or not a program file?)")
    if not msg.IsInitialized():   # a required field is absent, or an enum holds a value outside the schema
        raise FormatError(f"{source}: {_uninitialized(msg)}")
    program = program_from_proto(msg)
    check_structure(program, source)
    return program


def _json_object(data: bytes, source: str) -> None:
    """A program in JSON is an object: anything else is said as what it is, not as a protobuf field error."""
    import json
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FormatError(f"{source}: not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise FormatError(f"{source}: not a program: the JSON holds a {type(value).__name__}, not an object (Paddle "
                          f"3's PIR JSON or a ProgramDesc)")


def _uninitialized(msg) -> str:
    """Where the first required field is missing, named as a user reads the program."""
    errors = msg.FindInitializationErrors()
    field = re.match(r"blocks\[(\d+)\]\.(vars|ops)\[(\d+)\]\.?(.*)", errors[0])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if field is None:
        return f"the required field {errors[0]} is missing or holds a value outside the schema{more}"
    block, kind, index, rest = int(field[1]), field[2], int(field[3]), field[4]
    item = msg.blocks[block].vars[index] if kind == "vars" else msg.blocks[block].ops[index]
    name = item.name if kind == "vars" else item.type
    what = f"var {index} ({name!r})" if kind == "vars" else f"op {index} ({name!r})"
    return (f"block {block}, {what}: the required field '{rest or 'name'}' is missing or holds a value "
            f"outside the schema (an unknown data type or attribute type?){more}")


def _decode_reason(fmt: str, exc: Exception, size: int) -> str:
    if fmt == "pb":
        return f"the binary protobuf ({size} bytes) is truncated or corrupt"
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"invalid {'text format' if fmt == 'pbtxt' else 'JSON'}: {detail}"


def load(path: str | os.PathLike, *, lazy: bool = True) -> Program:
    """Read a program from .pb (binary), .pbtxt (text) or .json. ``lazy``: a binary program's blocks are read on first
    use, and a fault inside one is raised there (parse_program)."""
    if str(path).endswith(PARAMETER_SUFFIXES):
        raise FormatError(f"'{path}' is a parameter file, not a program: give the program (.json, .pdmodel, .pb) and "
                          f"this file with --params (gradc.load_params in Python)")
    if str(path) == STDIO:   # a program piped in: `gradc compile - -o -`
        data = sys.stdin.buffer.read()
        return parse_program(data, detect_format(path, data), "<stdin>", lazy=lazy)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read '{path}': {exc.strerror}{_paddle_prefix(Path(path))}") from None
    return parse_program(data, detect_format(path, data), str(path), lazy=lazy)


PARAMETER_SUFFIXES = (".pdiparams", ".pdparams", ".pdopt", ".npz", ".pdiparams.info")
PROGRAM_SUFFIXES = (".json", ".pdmodel", ".pb", ".pbtxt")


def _paddle_prefix(path: Path) -> str:
    """A hint for a path Paddle's loaders take but a file name is wanted for: the prefix of paddle.jit.save's files
    ('model' for model.json) or the directory holding them."""
    beside = [Path(f"{path}{suffix}") for suffix in PROGRAM_SUFFIXES]
    if path.is_dir():   # Paddle 1.x's save_inference_model names its program __model__
        saved = sorted(found for suffix in PROGRAM_SUFFIXES for found in path.glob(f"*{suffix}"))
        beside = [path / "__model__", *saved]
    found = [str(candidate) for candidate in beside if candidate.is_file()]
    if not found:
        return ""
    return f" (a program is named by its file, not by Paddle's path prefix or its directory: {' or '.join(found[:3])}?)"


@gc_paused()
def serialize(program: Program, fmt: str = "pb") -> bytes:
    if fmt == "pir":
        return serialize_pir(program)
    if fmt == "pb":
        return encode_program(program)
    from .protobuf import program_to_proto
    msg = program_to_proto(program)
    if fmt == "pbtxt":
        from google.protobuf import text_format
        return text_format.MessageToString(msg).encode("utf-8")
    from .jsonform import message_to_json
    return message_to_json(msg)


def __getattr__(name: str):
    """The protobuf converters, imported on first use (they bring protobuf's runtime)."""
    if name not in ("program_from_proto", "program_to_proto"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import protobuf
    return getattr(protobuf, name)


def save(program: Program, path: str | os.PathLike, fmt: str | None = None) -> None:
    """Write a program, format chosen by extension (or ``fmt``); atomic: no half-written file."""
    write_atomic(path, serialize(program, fmt or detect_format(path)))
