"""Converting parsed VarDesc and OpDesc messages into the IR for a fraction of the field-by-field cost
(reading a field of a protobuf message from Python costs about as much as protobuf's parse of the field).

A program repeats itself: its vars differ in name but share a handful of types and flags, its ops share
their attributes (Paddle's 15 per op, op_callstack included, are the same for every layer built by the same
line). So each message is serialised (one C call) and read as bytes: a var's bytes after its name, and the
run of an op's attributes, are looked up in a table of those already converted; slots and names are read
from the bytes directly. The result is the same IR the reference converters in gradc.io.protobuf give;
anything these bytes do not show plainly (unknown fields, an unusual layout) goes through them.
"""

from __future__ import annotations

from ..ir import OpDesc, VarDesc
from ..proto import framework_pb2 as pb
from .protobuf import _op_from_proto, _var_from_proto
from .wire import varint


class _Unusual(Exception):
    """Bytes this reader leaves to the reference converter."""


def _varint_at(data: bytes, pos: int) -> tuple[int, int]:
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


def _text(chunk: bytes):
    """A string field as the message gives it: text, or the bytes when they are not UTF-8."""
    try:
        return chunk.decode()
    except UnicodeDecodeError:
        return chunk


def _slot(data: bytes, pos: int, end: int) -> tuple[str, list[str]]:
    """An OpDesc.Var: the parameter (field 1), then its arguments (field 2). Hot: the common case (a length
    under 128, ASCII text) is read inline."""
    if data[pos] != 0x0A:
        raise _Unusual
    size = data[pos + 1]
    size, pos = (size, pos + 2) if size < 128 else _varint_at(data, pos + 1)
    chunk = data[pos:pos + size]
    slot = chunk.decode() if chunk.isascii() else _text(chunk)
    pos += size
    args = []
    while pos < end:
        if data[pos] != 0x12:
            raise _Unusual
        size = data[pos + 1]
        size, pos = (size, pos + 2) if size < 128 else _varint_at(data, pos + 1)
        chunk = data[pos:pos + size]
        args.append(chunk.decode() if chunk.isascii() else _text(chunk))
        pos += size
    if pos != end:
        raise _Unusual
    return slot, args


class Reader:
    """One load: the var bodies and attribute runs converted so far."""

    def __init__(self):
        self._var_bodies: dict[bytes, tuple] = {}
        self._attr_runs: dict[bytes, tuple] = {}

    def var(self, msg: pb.VarDesc) -> VarDesc:
        name = msg.name
        data = msg.SerializeToString()
        encoded = name.encode() if type(name) is str else name
        head = 1 + (1 if len(encoded) < 128 else len(varint(len(encoded)))) + len(encoded)
        if data[:1] != b"\x0a" or data[head - len(encoded):head] != encoded:
            return _var_from_proto(msg)
        body = data[head:]
        known = self._var_bodies.get(body)
        if known is None:
            ref = _var_from_proto(msg)
            known = self._var_bodies[body] = (
                ref.type, ref.dtype, None if ref.shape is None else tuple(ref.shape), ref.lod_level, ref.raw_type,
                ref.persistable, ref.need_check_feed, ref.is_parameter, ref.stop_gradient, tuple(ref.attrs))
        var = VarDesc.__new__(VarDesc)
        var.name = name
        (var.type, var.dtype, shape, var.lod_level, var.raw_type, var.persistable, var.need_check_feed,
         var.is_parameter, var.stop_gradient, attrs) = known
        var.shape = None if shape is None else list(shape)
        var.attrs = list(attrs)
        return var

    def op(self, msg: pb.OpDesc) -> OpDesc:
        try:
            return self._op(msg)
        except (_Unusual, IndexError):
            return _op_from_proto(msg)

    def _op(self, msg: pb.OpDesc) -> OpDesc:
        data = msg.SerializeToString()
        pos, size = 0, len(data)
        inputs, outputs = {}, {}
        op = OpDesc.__new__(OpDesc)
        op.is_target = None
        run = None
        while pos < size:   # fields in number order, as protobuf writes them: inputs, outputs, type, attrs
            tag = data[pos]
            if tag == 0x0A or tag == 0x12:
                length, pos = _varint_at(data, pos + 1)
                slot, args = _slot(data, pos, pos + length)
                (inputs if tag == 0x0A else outputs)[slot] = args
                pos += length
            elif tag == 0x1A:
                length, pos = _varint_at(data, pos + 1)
                op.type = _text(data[pos:pos + length])
                pos += length
            elif tag == 0x22 and run is None:
                start = pos
                while pos < size and data[pos] == 0x22:
                    length, pos = _varint_at(data, pos + 1)
                    pos += length
                run = data[start:pos]
            elif tag == 0x28 and pos + 2 == size and data[pos + 1] < 2:
                op.is_target = data[pos + 1] == 1
                pos += 2
            else:
                raise _Unusual
        if pos != size or not hasattr(op, "type"):
            raise _Unusual
        op.inputs, op.outputs = inputs, outputs
        if run is None:
            op.attrs, op.attr_types, op.repeated_attrs = {}, {}, []
            return op
        known = self._attr_runs.get(run)
        if known is None:
            ref = _op_from_proto(msg)
            known = self._attr_runs[run] = (ref.attrs, ref.attr_types, tuple(ref.repeated_attrs))
        attrs, types, repeated = known
        op.attrs = {name: list(value) if type(value) is list else value for name, value in attrs.items()}
        op.attr_types = dict(types)
        op.repeated_attrs = list(repeated)
        return op
