"""The plain cases of a var body, an attribute and the program's header, decoded from their bytes without protobuf,
so that loading a binary program need not import protobuf's runtime (about a fifth of gradc's start-up).

Each decoder reads only the layout protobuf itself writes for the common case: known fields in field-number
order, each once, repeated numbers unpacked. Its result is kept only where gradc.io.wire's encoder gives back the
very bytes read: then protobuf's parse of those bytes, converted by gradc.io.protobuf, gives the same IR (the
encoder writes what that converter's inverse serialises). Anything else returns None, and the reader parses it
with protobuf, which also refuses what it refuses (a missing required field, an enum value outside the schema).
"""

from __future__ import annotations

import struct

from ..ir import AttrType, VarDesc, VarType
from .wire import Encoder
from .wire_values import read_varint, tensor_desc_bytes

_SIGN64 = 2**63
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
# AttrType -> (field number, wire type, repeated)
_ATTR_FIELDS = {
    AttrType.INT: (3, _VARINT, False), AttrType.FLOAT: (4, _FIXED32, False), AttrType.STRING: (5, _BYTES, False),
    AttrType.INTS: (6, _VARINT, True), AttrType.FLOATS: (7, _FIXED32, True), AttrType.STRINGS: (8, _BYTES, True),
    AttrType.BOOLEAN: (10, _VARINT, False), AttrType.BOOLEANS: (11, _VARINT, True),
    AttrType.BLOCK: (12, _VARINT, False), AttrType.LONG: (13, _VARINT, False), AttrType.BLOCKS: (14, _VARINT, True),
    AttrType.LONGS: (15, _VARINT, True), AttrType.FLOAT64S: (16, _FIXED64, True),
    AttrType.VAR: (17, _BYTES, False), AttrType.VARS: (18, _BYTES, True), AttrType.FLOAT64: (19, _FIXED64, False),
}
_BOOLEAN_TYPES = (AttrType.BOOLEAN, AttrType.BOOLEANS)
_TEXT_TYPES = (AttrType.STRING, AttrType.STRINGS, AttrType.VAR, AttrType.VARS)
# a modelled var type -> the VarType field holding its tensor: selected_rows (2), sparse_coo (11) and sparse_csr (12),
# each a bare TensorDesc; dense_tensor (3) and tensor_array (4), each a TensorDesc (1) and a lod level (2)
_TENSOR_FIELD = {VarType.SELECTED_ROWS: 2, VarType.DENSE_TENSOR: 3, VarType.DENSE_TENSOR_ARRAY: 4,
                 VarType.SPARSE_COO: 11, VarType.SPARSE_CSR: 12}
_BARE_TENSOR_FIELDS = (2, 11, 12)
_FLAGS = {3: "persistable", 4: "need_check_feed", 5: "is_parameter", 6: "stop_gradient"}
_DENSE_TENSOR, _STRINGS = int(VarType.DENSE_TENSOR), int(AttrType.STRINGS)   # ints, as protobuf's parse gives them
_STRINGS_TYPE_FIELD = bytes((0x10, _STRINGS))   # OpDesc.Attr's field 2 (type), STRINGS
_DENSE_FLAGS = tuple((number << 3, flag) for number, flag in _FLAGS.items())   # (key byte of a varint field, flag)


class _NotPlain(Exception):
    pass


_last_header: tuple[bytes | None, tuple] = (None, (None, None))   # the header read last, and what it holds


def fields(data: bytes) -> list[tuple[int, int, object]]:
    """(field number, wire type, value) in order: a varint as an int, a fixed or length-delimited field as bytes."""
    out, pos, size = [], 0, len(data)
    while pos < size:
        key = data[pos]   # keys, lengths and most values take one byte: read inline
        key, pos = (key, pos + 1) if key < 128 else read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if pos >= size:
            raise _NotPlain
        if wire == _VARINT:
            value = data[pos]
            value, pos = (value, pos + 1) if value < 128 else read_varint(data, pos)
        elif wire == _BYTES:
            length = data[pos]
            length, pos = (length, pos + 1) if length < 128 else read_varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire in (_FIXED32, _FIXED64):
            width = 4 if wire == _FIXED32 else 8
            value, pos = data[pos:pos + width], pos + width
        else:
            raise _NotPlain
        if pos > size or number == 0:
            raise _NotPlain
        out.append((number, wire, value))
    return out


def _signed(value: int) -> int:
    return value - 2 * _SIGN64 if value >= _SIGN64 else value


def _only(found: list, numbers: tuple[int, ...]) -> dict[int, object]:
    """The fields, each of ``numbers`` at most once and in that order; nothing else."""
    got = {}
    for number, wire, value in found:
        if number not in numbers or number in got or any(n > number for n in got):
            raise _NotPlain
        got[number] = (wire, value)
    return got


class PlainDecoder:
    """One load's decoder, with the encoder its results are checked against (``texts``: the load's names by their
    bytes, which text-valued attributes share)."""

    def __init__(self, texts: dict[bytes, str] | None = None):
        self._encoder = Encoder()
        self._texts = {} if texts is None else texts

    def var(self, name: str, body: bytes, data: bytes) -> VarDesc | None:
        """The VarDesc whose bytes are ``data``: ``name``, then ``body``; None where it is not plain."""
        try:
            var = _dense_var(name, body) or _var(name, body)
            return var if self._encoder.plain_var(var) == data else None
        except Exception:  # noqa: BLE001 - whatever is not plain is protobuf's to read
            return None

    def attr(self, chunk: bytes, tagged: bytes) -> tuple[str, int, object] | None:
        """(name, type, value) of the OpDesc.Attr ``chunk`` (``tagged``: as the OpDesc's field); None where it is
        not plain."""
        try:
            name, kind, value = _strings_attr(chunk, self._texts) or _attr(chunk, self._texts)
            return (name, kind, value) if self._encoder.attr(name, kind, value) == tagged else None
        except Exception:  # noqa: BLE001 - whatever is not plain is protobuf's to read
            return None

    def header(self, data: bytes, program) -> bool:
        """Set the program's version and op version map from ``data`` (ProgramDesc fields 4 and 5) where plain."""
        global _last_header
        if _last_header[0] == data:   # every program one Paddle version saves has the same header
            program.version, versions = _last_header[1]
            program.op_version_map = None if versions is None else list(versions)
            return True
        try:
            version, versions = _header(data)
            program.version, program.op_version_map = version, versions
            if b"".join(self._encoder.header(program)) == data:
                _last_header = (data, (version, tuple(versions) if versions is not None else None))
                return True
        except Exception:  # noqa: BLE001 - whatever is not plain is protobuf's to read
            pass
        program.version = program.op_version_map = None
        return False


def _blank_var(name: str) -> VarDesc:
    var = VarDesc.__new__(VarDesc)
    var.name = name
    var.dtype = var.shape = var.lod_level = var.raw_type = None
    var.persistable = var.need_check_feed = var.is_parameter = var.stop_gradient = None
    var.attrs, var.dist = (), ()
    return var


def _dense_var(name: str, body: bytes) -> VarDesc | None:
    """The common var, a dense tensor, read straight from the one layout protobuf writes for it (the layout
    gradc.io.wire_values.dense_var_body writes), in a third to a sixth of the general reading's time. None for
    any other layout."""
    # VarType (field 2): type 7, then its dense_tensor (3): a TensorDesc (1: dtype, dims), then a lod level
    if len(body) < 10 or body[0] != 0x12 or body[1] > 127 or body[2:5] != b"\x08\x07\x1a" or body[5] > 127 \
            or body[6] != 0x0A or body[7] > 127 or body[8] != 0x08 or body[9] > 127:
        return None
    kind_end, dense_end, tensor_end = 2 + body[1], 6 + body[5], 8 + body[7]
    var = _blank_var(name)
    var.type, var.dtype, shape, pos = _DENSE_TENSOR, body[9], [], 10
    while pos < tensor_end:
        if body[pos] != 0x10:
            return None
        dim = body[pos + 1]
        dim, pos = (dim, pos + 2) if dim < 128 else read_varint(body, pos + 1)
        shape.append(dim if dim < _SIGN64 else dim - 2 * _SIGN64)
    if pos != tensor_end or kind_end != dense_end or dense_end > len(body):
        return None
    var.shape = shape
    if pos < dense_end:
        if body[pos] != 0x10:
            return None
        lod, pos = read_varint(body, pos + 1)
        var.lod_level = lod if lod < _SIGN64 else lod - 2 * _SIGN64
    end = len(body)
    for tag, flag in _DENSE_FLAGS:   # in field order, a byte each: the encoder's check refuses a value not 0 or 1
        if pos + 1 < end and body[pos] == tag:
            setattr(var, flag, bool(body[pos + 1]))
            pos += 2
    return var if pos == end else None


def _var(name: str, body: bytes) -> VarDesc:
    var = _blank_var(name)
    got = _only(fields(body), (2, 3, 4, 5, 6))
    if 2 not in got:
        raise _NotPlain
    for number, flag in _FLAGS.items():
        if number in got:
            setattr(var, flag, bool(got[number][1]))
    kind = _only(fields(got[2][1]), (1, 2, 3, 4, 11, 12))
    if 1 not in kind or len(kind) > 2:
        raise _NotPlain
    var.type = kind[1][1]
    tensor_field = _TENSOR_FIELD.get(var.type)
    if len(kind) == 2:
        if next(iter(kind.keys() - {1})) != tensor_field:
            raise _NotPlain   # another var type's field: a type the IR keeps as raw bytes
        tensor = kind[tensor_field][1]
        if tensor_field not in _BARE_TENSOR_FIELDS:
            dense = _only(fields(tensor), (1, 2))
            if 2 in dense:
                var.lod_level = _signed(dense[2][1])
            tensor = dense[1][1]
        desc = fields(tensor)
        if not desc or desc[0][:2] != (1, _VARINT) or any(f[:2] != (2, _VARINT) for f in desc[1:]):
            raise _NotPlain
        var.dtype = desc[0][2]
        var.shape = [_signed(f[2]) for f in desc[1:]]
    return var


def tensor_desc(raw: bytes) -> tuple[int, tuple[int, ...]] | None:
    """(data type, dims) of a VarType.TensorDesc where it is plain (its type in the schema, and the bytes those
    values encode to); None for protobuf to read."""
    try:
        found = fields(raw)
        if not found or found[0][:2] != (1, _VARINT) or any(f[:2] != (2, _VARINT) for f in found[1:]):
            return None
        dtype, dims = found[0][2], tuple(_signed(f[2]) for f in found[1:])
        return (dtype, dims) if tensor_desc_bytes(dtype, dims) == raw else None
    except Exception:  # noqa: BLE001 - whatever is not plain is protobuf's to read
        return None


def shared_text(texts: dict[bytes, str], raw: bytes) -> str:
    """The str of the UTF-8 ``raw`` (a UnicodeDecodeError where it is not), the one ``texts`` holds where it was met
    before."""
    text = texts.get(raw)
    if text is None:
        text = texts[raw] = raw.decode()
    return text


def _strings_attr(chunk: bytes, texts: dict[bytes, str]) -> tuple[str, int, list[str]] | None:
    """A STRINGS attribute read straight from the one layout protobuf writes for it (name, type, each string, every
    length under 128): a grad op's op_role_var, one per parameter, is met once each. None for any other layout."""
    size, pos = len(chunk), 2 + chunk[1]
    if chunk[0] != 0x0A or chunk[1] > 127 or chunk[pos:pos + 2] != _STRINGS_TYPE_FIELD:
        return None
    name, pos, values = chunk[2:pos].decode(), pos + 2, []
    while pos < size:
        if chunk[pos] != 0x42 or chunk[pos + 1] > 127:
            return None
        end = pos + 2 + chunk[pos + 1]
        values.append(shared_text(texts, chunk[pos + 2:end]))
        pos = end
    return (name, _STRINGS, values) if pos == size else None


def _attr(chunk: bytes, texts: dict[bytes, str]) -> tuple[str, int, object]:
    found = fields(chunk)
    if len(found) < 2 or found[0][:2] != (1, _BYTES) or found[1][:2] != (2, _VARINT):
        raise _NotPlain
    name, kind = found[0][2].decode(), found[1][2]
    number, wire, repeated = _ATTR_FIELDS[AttrType(kind)]
    values = [_attr_value(kind, wire, value, texts) for n, w, value in found[2:] if (n, w) == (number, wire)]
    if len(values) != len(found) - 2 or (not repeated and len(values) > 1):
        raise _NotPlain
    return name, kind, values if repeated else (values[0] if values else None)


def _attr_value(kind: int, wire: int, raw, texts: dict[bytes, str]):
    if wire == _FIXED32:
        return struct.unpack("<f", raw)[0]
    if wire == _FIXED64:
        return struct.unpack("<d", raw)[0]
    if wire == _BYTES:
        if kind not in _TEXT_TYPES:
            raise _NotPlain
        return shared_text(texts, raw)
    return bool(raw) if kind in _BOOLEAN_TYPES else _signed(raw)


def _header(data: bytes) -> tuple[int | None, list | None]:
    got = _only(fields(data), (4, 5))
    version = versions = None
    if 4 in got:
        inner = _only(fields(got[4][1]), (1,))
        version = _signed(inner[1][1]) if 1 in inner else 0
    if 5 in got:
        versions = []
        for number, wire, pair in fields(got[5][1]):
            if (number, wire) != (1, _BYTES):
                raise _NotPlain
            parts = _only(fields(pair), (1, 2))
            versions.append((parts[1][1].decode(), _signed(_only(fields(parts[2][1]), (1,))[1][1])))
    return version, versions
