"""One value as protobuf encodes it (varints, fixed-width numbers, strings), each attribute type's field, a dense
var's body, a var of any other kind and a TensorDesc, for gradc.io.wire; and a varint read back, for the readers. A
value of another Python type, or out of its field's range, raises Unusual: the caller writes it through protobuf's
message instead."""

from __future__ import annotations

import struct

from ..ir import AttrType, VarDesc, VarType

VAR_TYPES = frozenset(map(int, VarType))   # the schema's enums (gradc.ir mirrors them; a test compares)
ENUM_VALUE = (int, VarType)   # a dtype's Python types the enum field takes as they are (not 5.0)
INT32 = (-(2**31), 2**31)
INT64 = (-(2**63), 2**63)


class Unusual(Exception):
    """A value the plain encoder leaves to the message path."""


def varint(n: int) -> bytes:
    if 0 <= n < 128:
        return SMALL[n]
    if 0 < n < 16384:   # two bytes: an op's or a var's length, often
        return bytes((n & 127 | 128, n >> 7))
    if n < 0:
        n &= 0xFFFFFFFFFFFFFFFF   # two's complement in ten bytes, as protobuf writes negative ints
    out = bytearray()
    while n > 127:
        out.append((n & 127) | 128)
        n >>= 7
    out.append(n)
    return bytes(out)


SMALL = [bytes((n,)) for n in range(128)]


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it (an IndexError where the bytes end first)."""
    byte = data[pos]
    if byte < 128:
        return byte, pos + 1
    result, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 127) << shift
        if byte < 128:
            return result, pos
        shift += 7


def length_prefixed(tag: bytes, body: bytes) -> bytes:
    return tag + varint(len(body)) + body


def as_int(value, bounds) -> bytes:
    if type(value) is not int or not bounds[0] <= value < bounds[1]:
        raise Unusual
    return varint(value)


def as_bool(value) -> bytes:
    if type(value) is not bool:
        raise Unusual
    return b"\x01" if value else b"\x00"


def as_float(value) -> bytes:
    if type(value) not in (float, int):
        raise Unusual
    try:
        return struct.pack("<f", value)
    except OverflowError:
        raise Unusual from None


def as_double(value) -> bytes:
    if type(value) not in (float, int):
        raise Unusual
    return struct.pack("<d", value)


def as_text(value) -> bytes:
    if type(value) is not str:
        raise Unusual
    return value.encode("utf-8")


def text_field(tag: bytes, value) -> bytes:
    """A string field: tag, length, UTF-8 bytes (inline: a program's names pass here once each)."""
    if type(value) is not str:
        raise Unusual
    data = value.encode("utf-8")
    size = len(data)
    return tag + (SMALL[size] if size < 128 else varint(size)) + data


def text_fields(tag: bytes, values: list) -> bytes:
    """A repeated string field's elements, each tagged (TypeError for an element not a str)."""
    parts = []
    for data in map(str.encode, values):
        size = len(data)
        parts += (tag, SMALL[size] if size < 128 else varint(size), data)
    return b"".join(parts)


def string_field(tag: bytes):
    return lambda value: text_field(tag, value)


# AttrType -> (encode one value to its tagged field(s), is repeated); SCALAR(S) go the message way
SCALAR_FIELDS = {
    AttrType.INT: lambda v: b"\x18" + as_int(v, INT32),
    AttrType.FLOAT: lambda v: b"\x25" + as_float(v),
    AttrType.STRING: string_field(b"\x2a"),
    AttrType.BOOLEAN: lambda v: b"\x50" + as_bool(v),
    AttrType.BLOCK: lambda v: b"\x60" + as_int(v, INT32),
    AttrType.LONG: lambda v: b"\x68" + as_int(v, INT64),
    AttrType.VAR: string_field(b"\x8a\x01"),
    AttrType.FLOAT64: lambda v: b"\x99\x01" + as_double(v),
}
TEXT_LIST_TAGS = {AttrType.STRINGS: b"\x42", AttrType.VARS: b"\x92\x01"}   # written by text_fields, not LIST_FIELDS
LIST_FIELDS = {
    AttrType.INTS: lambda v: b"\x30" + as_int(v, INT32),
    AttrType.FLOATS: lambda v: b"\x3d" + as_float(v),
    AttrType.BOOLEANS: lambda v: b"\x58" + as_bool(v),
    AttrType.BLOCKS: lambda v: b"\x70" + as_int(v, INT32),
    AttrType.LONGS: lambda v: b"\x78" + as_int(v, INT64),
    AttrType.FLOAT64S: lambda v: b"\x81\x01" + as_double(v),
}


def dense_var_body(var: VarDesc) -> bytes:
    """A dense tensor var's fields after its name (gradc.io.wire caches them by their values)."""
    if type(var.dtype) not in ENUM_VALUE or var.dtype not in VAR_TYPES:
        raise Unusual
    dims = b"".join([b"\x10" + (SMALL[d] if type(d) is int and 0 <= d < 128 else as_int(d, INT64))
                     for d in var.shape or ()])
    tensor = b"\x08" + varint(int(var.dtype)) + dims
    dense = b"\x0a" + varint(len(tensor)) + tensor
    dense += b"" if var.lod_level is None else b"\x10" + as_int(var.lod_level, INT32)
    kind = b"\x08\x07\x1a" + varint(len(dense)) + dense
    parts = [b"\x12", varint(len(kind)), kind]
    for tag, value in ((b"\x18", var.persistable), (b"\x20", var.need_check_feed), (b"\x28", var.is_parameter),
                       (b"\x30", var.stop_gradient)):
        if value is not None:
            if type(value) is not bool:
                raise Unusual
            parts.append(tag + (b"\x01" if value else b"\x00"))
    return b"".join(parts)


_TENSOR_FIELDS = {VarType.SELECTED_ROWS: b"\x12", VarType.DENSE_TENSOR: b"\x1a", VarType.DENSE_TENSOR_ARRAY: b"\x22",
                  VarType.SPARSE_COO: b"\x5a", VarType.SPARSE_CSR: b"\x62"}
_BARE_TENSOR_TAGS = (b"\x12", b"\x5a", b"\x62")   # selected_rows, sparse_coo, sparse_csr: a TensorDesc, no lod level
_FLAGS = ((b"\x18", "persistable"), (b"\x20", "need_check_feed"), (b"\x28", "is_parameter"), (b"\x30", "stop_gradient"))


def other_var(var: VarDesc) -> bytes:
    """A var of any other kind than the common dense tensor gradc.io.wire writes itself (Unusual where the message
    path must write it)."""
    parts = [length_prefixed(b"\x0a", as_text(var.name))]
    if var.raw_type is not None:
        if type(var.raw_type) is not bytes:
            raise Unusual
        parts.append(length_prefixed(b"\x12", var.raw_type))
    else:
        if var.type not in VAR_TYPES:
            raise Unusual
        body = b"\x08" + varint(int(var.type))
        tag = _TENSOR_FIELDS.get(var.type)
        if tag is not None and var.dtype is not None:
            body += length_prefixed(tag, _tensor(var, bare=tag in _BARE_TENSOR_TAGS))
        parts.append(length_prefixed(b"\x12", body))
    for tag, flag in _FLAGS:
        value = getattr(var, flag)
        if value is not None:
            parts.append(tag + as_bool(value))
    for raw in var.attrs:
        if type(raw) is not bytes:
            raise Unusual
        parts.append(length_prefixed(b"\x3a", raw))
    return b"".join(parts)


def _tensor(var: VarDesc, bare: bool) -> bytes:
    if type(var.dtype) not in ENUM_VALUE or var.dtype not in VAR_TYPES:
        raise Unusual
    tensor = b"\x08" + varint(int(var.dtype)) + b"".join(b"\x10" + as_int(d, INT64) for d in var.shape or ())
    if bare:
        if var.lod_level is not None:   # a TensorDesc has no lod level: the message path says so
            raise Unusual
        return tensor
    lod = b"" if var.lod_level is None else b"\x10" + as_int(var.lod_level, INT32)
    return length_prefixed(b"\x0a", tensor) + lod


def tensor_desc_bytes(dtype: int, dims) -> bytes:
    """A VarType.TensorDesc message: its data type and dims (a .pdiparams file holds one per tensor); Unusual for
    a data type outside the schema."""
    if int(dtype) not in VAR_TYPES:
        raise Unusual
    return b"\x08" + varint(int(dtype)) + b"".join([b"\x10" + as_int(int(d), INT64) for d in dims])
