"""Reading a binary ProgramDesc into the IR straight from its bytes, for a fraction of the field-by-field cost
(reading a field of a protobuf message from Python costs about as much as protobuf's parse of the field; making
no messages at all, and so serialising none again, takes a fifth off a load).

A program repeats itself: its vars differ in name but share a handful of types and flags, its ops share their
attributes (Paddle's 15 per op, op_callstack included, are the same for every layer built by the same line). So a
var's bytes after its name, an op's run of attributes, and each attribute of a run not met before (a grad op's
op_role_var names its own parameter, the rest repeat) are looked up in tables of those already converted; blocks,
slots and names are read from the bytes directly (a name decoded once, every mention of it sharing that str), and a
var body, attribute or header met first is decoded by gradc.io.plain_decode. The result is the same IR the reference
converters in gradc.io.protobuf give. Anything the bytes do not show plainly (unknown fields, an unusual layout) is
parsed by protobuf, imported only then, and goes through those converters; bytes protobuf would refuse, or whose
required fields are missing, make ``read_program`` give up, so that the caller's protobuf parse names the fault.
Bytes converted once were checked then, so a table hit needs no check.
"""

from __future__ import annotations

from ..ir import Block, OpDesc, Program, VarDesc, var_attrs_of
from .plain_decode import PlainDecoder, shared_text
from .wire_values import read_varint


class Unusual(Exception):
    """Bytes this reader leaves to the reference converter."""


class Refused(Exception):
    """Bytes protobuf refuses, or a message missing a required field: the caller's parse says which."""


def read_program(data: bytes) -> Program | None:
    """The program a binary ProgramDesc holds, or None where its layout is not the plain one or protobuf would
    refuse it (the caller then parses it with protobuf)."""
    layout = program_layout(data)
    if layout is None:
        return None
    reader = Reader()
    program = Program.empty()
    try:
        for start, end in layout[0]:
            program.blocks.append(reader.block(program, data, start, end))
        reader.header(program, layout[1])
    except (Unusual, Refused, IndexError):
        return None
    return program if program.blocks else None


def program_layout(data: bytes) -> tuple[list[tuple[int, int]], list[bytes]] | None:
    """Where each block's bytes are, and the bytes of the version and op_version_map fields; None where the
    program's own fields are not the plain ones or do not fit in ``data``."""
    spans, header = [], []
    pos, size = 0, len(data)
    try:
        while pos < size:
            tag = data[pos]
            start = pos
            length, pos = read_varint(data, pos + 1)
            end = pos + length
            if end > size or tag not in (0x0A, 0x22, 0x2A):
                return None
            if tag == 0x0A:
                spans.append((pos, end))
            else:
                header.append(data[start:end])
            pos = end
    except IndexError:
        return None
    return spans, header


def _parsed(message: str, data: bytes):
    """``data`` parsed by protobuf as the ProgramDesc message named ``message`` ("OpDesc.Attr"), for the reference
    converters. Imported here: a plain program is read without protobuf."""
    from google.protobuf.message import DecodeError

    from ..proto import framework_pb2

    message_type = framework_pb2
    for part in message.split("."):
        message_type = getattr(message_type, part)
    try:
        msg = message_type.FromString(data)
    except DecodeError:
        raise Refused from None
    if not msg.IsInitialized():
        raise Refused
    return msg


def _given_or_parsed(msg, message: str, data: bytes):
    return _parsed(message, data) if msg is None else msg


def int32_at(data: bytes, pos: int) -> tuple[int, int]:
    """An int32 field's varint, as protobuf reads it (a negative one takes ten bytes)."""
    start = pos
    value, pos = read_varint(data, pos)
    if pos - start > 10 or (value >= 2**31 and not 2**64 - 2**31 <= value < 2**64):
        raise Unusual   # an overlong or out-of-range value: protobuf's own parse decides
    return (value - 2**64 if value >= 2**31 else value), pos


class Reader:
    """One load: the var bodies and attribute runs converted so far."""

    def __init__(self):
        # every name, slot, op type and text attribute read so far, by its bytes: a program names each var several
        # times, and one str per name (not one per mention) takes less memory and is hashed once by the passes' dicts
        self._texts: dict[bytes, str] = {}
        self.plain = PlainDecoder(self._texts)
        self._var_bodies: dict[bytes, tuple] = {}
        self._attr_runs: dict[bytes, tuple] = {}
        self._attrs: dict[bytes, tuple] = {}   # one OpDesc.Attr's bytes -> (name, type, value)

    def header(self, program: Program, header: list[bytes]) -> None:
        """The version and op_version_map fields' bytes, read into ``program``."""
        if header and not self.plain.header(b"".join(header), program):
            from .protobuf import header_from_proto
            header_from_proto(_parsed("ProgramDesc", b"".join(header)), program)

    def block(self, program: Program, data: bytes, pos: int, end: int) -> Block:
        """The BlockDesc in ``data[pos:end]``."""
        fields = {}   # by tag: idx (0x08), parent_idx (0x10), forward_block_idx (0x28)
        block_vars, ops = {}, []
        while pos < end:
            tag = data[pos]
            if tag == 0x1A or tag == 0x22:
                size = data[pos + 1]
                size, pos = (size, pos + 2) if size < 128 else read_varint(data, pos + 1)
                if pos + size > end:
                    raise Refused
                if tag == 0x1A:
                    var = self.var_at(data, pos, pos + size)
                    block_vars[var.name] = var
                else:
                    ops.append(self.op(data[pos:pos + size]))
                pos += size
            elif tag == 0x08 or tag == 0x10 or tag == 0x28:
                fields[tag], pos = int32_at(data, pos + 1)
            else:
                raise Unusual
        if pos != end or 0x08 not in fields or 0x10 not in fields:
            raise Unusual
        block = Block(program, fields[0x08], fields[0x10])
        block.forward_block_idx = fields.get(0x28)
        block.vars, block.ops = block_vars, ops
        return block

    def var(self, data: bytes, msg=None) -> VarDesc:
        """The VarDesc ``data`` holds (``msg``: the same, parsed by protobuf, where the caller has it)."""
        return self.var_at(data, 0, len(data), msg)

    def var_at(self, data: bytes, pos: int, end: int, msg=None) -> VarDesc:
        """The VarDesc in ``data[pos:end]``: a block's var is read in place, its body the one slice made."""
        size = data[pos + 1] if end - pos > 1 and data[pos] == 0x0A else 128
        head = pos + 2 + size
        if size >= 128 or head > end:   # a long name, or none first: the reference converter
            return _reference_var(data[pos:end], msg)
        raw, texts = data[pos + 2:head], self._texts
        name = texts.get(raw)
        if name is None:   # most vars are declared before the ops name them
            try:
                name = texts[raw] = raw.decode()
            except UnicodeDecodeError:   # protobuf gives such a name as its bytes: the reference converter does
                return _reference_var(data[pos:end], msg)
        body = data[head:end]
        known = self._var_bodies.get(body)
        if known is None:
            data = data[pos:end]
            ref = self.plain.var(name, body, data) if msg is None else None
            if ref is None:
                ref = _reference_var(data, msg)
                if _names_again(body):   # a second name, which wins: not a body to share
                    return ref
            known = self._var_bodies[body] = (
                ref.type, ref.dtype, None if ref.shape is None else tuple(ref.shape), ref.lod_level, ref.raw_type,
                ref.persistable, ref.need_check_feed, ref.is_parameter, ref.stop_gradient, tuple(ref.attrs))
        var = VarDesc.__new__(VarDesc)
        var.name = name
        (var.type, var.dtype, shape, var.lod_level, var.raw_type, var.persistable, var.need_check_feed,
         var.is_parameter, var.stop_gradient, attrs) = known
        var.shape = None if shape is None else list(shape)
        var.attrs, var.dist = attrs, ()
        return var

    def op(self, data: bytes, msg=None) -> OpDesc:
        """The OpDesc ``data`` holds (``msg``: the same, parsed by protobuf, where the caller has it)."""
        try:
            return self._op(data)
        except (Unusual, IndexError, UnicodeDecodeError):
            from .protobuf import _op_from_proto
            return _op_from_proto(_given_or_parsed(msg, "OpDesc", data))

    def _op(self, data: bytes) -> OpDesc:
        pos, size = 0, len(data)
        inputs, outputs, texts = {}, {}, self._texts
        op = OpDesc.__new__(OpDesc)
        op.is_target = None
        run = None
        while pos < size:   # fields in number order, as protobuf writes them: inputs, outputs, type, attrs
            tag = data[pos]
            if tag == 0x0A or tag == 0x12:   # an OpDesc.Var, read inline (hot): its parameter, then its arguments
                length = data[pos + 1]
                length, pos = (length, pos + 2) if length < 128 else read_varint(data, pos + 1)
                end = pos + length
                if data[pos] != 0x0A:
                    raise Unusual
                length = data[pos + 1]
                length, pos = (length, pos + 2) if length < 128 else read_varint(data, pos + 1)
                raw = data[pos:pos + length]
                slot = texts.get(raw)
                if slot is None:
                    slot = shared_text(texts, raw)
                pos += length
                args = []
                while pos < end:
                    if data[pos] != 0x12:
                        raise Unusual
                    length = data[pos + 1]
                    length, pos = (length, pos + 2) if length < 128 else read_varint(data, pos + 1)
                    raw = data[pos:pos + length]
                    name = texts.get(raw)
                    if name is None:
                        name = shared_text(texts, raw)
                    if args:
                        args.append(name)
                    else:
                        args = [name]   # most slots name one var: a list of one, not append's four places
                    pos += length
                if pos != end:
                    raise Unusual
                (inputs if tag == 0x0A else outputs)[slot] = args
            elif tag == 0x1A:
                length, pos = read_varint(data, pos + 1)
                raw = data[pos:pos + length]
                op.type = texts.get(raw) or shared_text(texts, raw)
                pos += length
            elif tag == 0x22 and run is None:
                start = pos
                while pos < size and data[pos] == 0x22:
                    length, pos = read_varint(data, pos + 1)
                    pos += length
                run = data[start:pos]
            elif tag == 0x28 and pos + 2 == size and data[pos + 1] < 2:
                op.is_target = data[pos + 1] == 1
                pos += 2
            else:
                raise Unusual
        if pos != size or not hasattr(op, "type"):
            raise Unusual
        op.inputs, op.outputs = inputs, outputs
        if run is None:
            op.attrs, op.attr_types, op.repeated_attrs, op.var_attrs = {}, {}, (), ()
            return op
        known = self._attr_runs.get(run)
        if known is None:
            attrs, types, repeated = self._attr_run(run)
            known = self._attr_runs[run] = (attrs, types, repeated, var_attrs_of(types))
        attrs, types, repeated, op.var_attrs = known
        op.attrs = {name: list(value) if type(value) is list else value for name, value in attrs.items()}
        op.attr_types = dict(types)
        op.repeated_attrs = repeated
        return op

    def _attr_run(self, run: bytes) -> tuple[dict, dict, tuple]:
        """The attributes of a run of OpDesc.Attr fields, each distinct one converted once."""
        attrs, types = {}, {}
        pos, size = 0, len(run)
        while pos < size:
            start = pos
            length, pos = read_varint(run, pos + 1)
            chunk = run[pos:pos + length]
            pos += length
            known = self._attrs.get(chunk)
            if known is None:
                known = self._attrs[chunk] = self.plain.attr(chunk, run[start:pos]) or _reference_attr(chunk)
            name, kind, value = known
            if name in attrs:   # written twice: the reference converter keeps the second where it was
                raise Unusual
            attrs[name] = value
            types[name] = kind
        return attrs, types, ()


def _reference_attr(chunk: bytes) -> tuple:
    from .protobuf import attr_value
    attr = _parsed("OpDesc.Attr", chunk)
    return attr.name, attr.type, attr_value(attr)


def _reference_var(data: bytes, msg=None) -> VarDesc:
    from .protobuf import _var_from_proto
    return _var_from_proto(_given_or_parsed(msg, "VarDesc", data))


def _names_again(body: bytes) -> bool:
    """Whether a var's bytes after its name hold a name again (protobuf keeps the last)."""
    from ..proto import framework_pb2
    return framework_pb2.VarDesc.FromString(body).HasField("name")
