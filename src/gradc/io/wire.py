"""A binary ProgramDesc written straight from the IR: the very bytes that protobuf's deterministic
serialisation of gradc.io.protobuf.program_to_proto gives, without building the message first (building
it cost ten times protobuf's own serialisation). Fields go in field-number order, sub-messages
length-prefixed, as the protobuf encoding rules fix them; var bodies and attribute values a program repeats
(Paddle's op_callstack is shared by an op and its grad ops) are encoded once per save. A var name is encoded where
it is used: a table of the names' bytes cost more than the encoding (its lookups miss the cache on a large program:
N=30000 saved 27% faster without it, N=3000 8%).

Anything unusual (a value of an unexpected Python type, a number out of its field's range, a SCALAR
attribute) is written by the message path, which also raises the errors it raises; protobuf is imported only then.
"""

from __future__ import annotations

from ..ir import Block, OpDesc, Program, VarDesc, VarType
from .wire_attrs import AttrEncoder
from .wire_values import (
    INT32,
    INT64,
    SMALL,
    TEXT_LIST_TAGS,
    Unusual,
    as_bool,
    as_int,
    as_text,
    dense_var_body,
    length_prefixed,
    other_var,
    text_field,
    varint,
)

_DENSE_TENSOR = int(VarType.DENSE_TENSOR)   # a plain int: the comparison with a var's int type is specialised
_VAR_STARTS = [b"\x1a" + SMALL[size] + b"\x0a" for size in range(128)]   # a var's tag and length, its name's tag
_RUN = 256   # vars or ops per joined run: join holds 80 B an item while it runs; a run of ops stays under 128 KiB


class Encoder(AttrEncoder):
    """One save: caches of the encoded names and attribute values seen so far."""

    def __init__(self):
        super().__init__()
        self._params: dict[str, bytes] = {}   # slot names, as a Var's field 1
        self._types: dict[str, bytes] = {}    # op types, as an OpDesc's field 3
        self._var_bodies: dict[tuple, tuple] = {}   # a dense var's key -> its starts by name size, its body
        self._var_starts: dict[int, list] = {}   # a body's size -> a var's starts by its name's size
        self._input_starts: dict[str, list] = {}   # slot -> its start by its one argument's size (_slot_start)
        self._output_starts: dict[str, list] = {}
        self._frames: dict[int, bytes] = {}   # an op's length -> the tag and length its field starts with

    # ------------------------------------------------------------ program, block
    def program(self, program: Program) -> list[bytes]:
        """The program's bytes as chunks to join: a block's frame, then its fields in runs (the one chunk protobuf
        wrote where the message path writes the program)."""
        chunks = []
        try:
            for block in program.blocks:
                self.block(block, chunks)
            chunks += self.header(program)
        except (Unusual, TypeError, ValueError, UnicodeError):
            from .protobuf import program_to_proto
            return [program_to_proto(program).SerializeToString(deterministic=True)]
        return chunks

    @staticmethod
    def header(program: Program) -> list[bytes]:
        """The program's version and op version map, as their fields (raises Unusual for a value out of range)."""
        parts = []
        if program.version is not None:
            parts.append(length_prefixed(b"\x22", b"\x08" + as_int(program.version, INT64)))
        if program.op_version_map is not None:
            pairs = b"".join(length_prefixed(b"\x0a", length_prefixed(b"\x0a", as_text(name)) + length_prefixed(
                b"\x12", b"\x08" + as_int(version, INT32))) for name, version in program.op_version_map)
            parts.append(length_prefixed(b"\x2a", pairs))
        return parts

    def block(self, block: Block, chunks: list) -> None:
        """Append the block as the ProgramDesc's field 1: its tag and length, then its fields in runs."""
        fields = [b"\x08" + as_int(block.idx, INT32) + b"\x10" + as_int(block.parent_idx, INT32)]
        found = list(block.vars.values())
        for first in range(0, len(found), _RUN):
            fields.append(b"".join(self._var_run(found[first:first + _RUN])))
        ops = block.ops
        for first in range(0, len(ops), _RUN):
            fields.append(b"".join(self._op_run(ops[first:first + _RUN])))
        if block.forward_block_idx is not None:
            fields.append(b"\x28" + as_int(block.forward_block_idx, INT32))
        chunks.append(b"\x0a" + varint(sum(map(len, fields))))
        chunks += fields

    def _op_run(self, run: list[OpDesc]) -> list[bytes]:
        """A run of ops' pieces, each op's tag and length then its bytes; an op the plain encoder leaves (Unusual,
        TypeError, ...) is written by the message path. Most of an op's input (tag 1) and output (tag 2) slots name one
        argument, written as two pieces: the slot's start (its tag and length, the slot's name, the argument's tag and
        length), cached by the size of the argument's bytes, then those bytes; any other slot (none or several
        arguments, a new slot, a long name) goes to _write_slot."""
        # an op encoded in this loop, not by a method called per op (2.7% of a save's instructions), its inputs' and
        # outputs' loops written out, not a method called twice (3.6%)
        frames, type_fields, cache = self._frames, self._types, self._attrs
        input_starts, output_starts = self._input_starts, self._output_starts
        pieces = []
        for op in run:
            try:
                parts = []
                slots, starts = op.inputs, input_starts
                for slot in slots:   # the dict's keys, each looked up: no items view and its iterator made per op
                    try:
                        [name] = slots[slot]
                        data = name.encode()
                        start = starts[slot][len(data)]
                    except (ValueError, KeyError, IndexError, AttributeError):
                        self._write_slot(parts, b"\x0a", slot, slots[slot], starts)
                        continue
                    parts.append(start or self._slot_start(b"\x0a", slot, len(data), starts[slot]))
                    parts.append(data)
                slots, starts = op.outputs, output_starts
                for slot in slots:
                    try:
                        [name] = slots[slot]
                        data = name.encode()
                        start = starts[slot][len(data)]
                    except (ValueError, KeyError, IndexError, AttributeError):
                        self._write_slot(parts, b"\x12", slot, slots[slot], starts)
                        continue
                    parts.append(start or self._slot_start(b"\x12", slot, len(data), starts[slot]))
                    parts.append(data)
                try:
                    parts.append(type_fields[op.type])
                except KeyError:
                    parts.append(_cached(type_fields, b"\x1a", op.type))
                if op.attrs:
                    types = op.attr_types
                    for name, value in op.attrs.items():
                        kind, held = types[name], type(value)
                        if held is list:
                            if not value:   # kept by attr() under its type and None (a grad op's op_role_var, often)
                                parts.append(cache.get((name, kind, list, None)) or self.attr(name, kind, value))
                            else:
                                parts.append(self._text_list(name, kind, value) if kind in TEXT_LIST_TAGS
                                             else self.attr(name, kind, value))
                        else:
                            try:
                                parts.append(cache[name, kind, held, value])
                            except (KeyError, TypeError):   # not seen yet, not kept by value, or not hashable
                                parts.append(self.attr(name, kind, value))
                if op.repeated_attrs:   # Paddle's second copy of an attribute, where it was
                    first = len(parts) - len(op.attrs)
                    for position, raw in op.repeated_attrs:
                        if type(raw) is not bytes:
                            raise Unusual
                        parts.insert(first + min(position, len(parts) - first), length_prefixed(b"\x22", raw))
                if op.is_target is not None:
                    parts.append(b"\x28" + as_bool(op.is_target))
                body = b"".join(parts)
            except (Unusual, TypeError, ValueError, UnicodeError, KeyError):
                body = _by_message(op)
            try:
                pieces.append(frames[len(body)])
            except KeyError:
                pieces.append(_cached_frame(frames, b"\x22", len(body)))
            pieces.append(body)
        return pieces

    # ------------------------------------------------------------ var
    def _var_run(self, run: list[VarDesc]) -> list[bytes]:
        """A run of vars' pieces, joined by the caller (cheaper than three += a var; a run, not the block, since
        join holds 80 B an item while it runs). Hot: the common var, a dense tensor, is written here."""
        bodies = self._var_bodies
        pieces = []
        for var in run:
            name, dtype = var.name, var.dtype
            if var.raw_type is not None or var.type != _DENSE_TENSOR or var.attrs or type(name) is not str:
                pieces.append(self.framed_var(var))
                continue
            # a dense var's body is keyed by its fields' values; its entry holds the objects it was made from, which
            # a var's fields must be (True, False, None, a dtype and a lod level of the same type and value), not
            # equal (1 is not True): a cheaper test of exact types than type() in the key
            lod, persistable, feed = var.lod_level, var.persistable, var.need_check_feed
            parameter, stop, shape = var.is_parameter, var.stop_gradient, var.shape or ()
            for dim in shape:   # ints only (as_int's rule), so that the key holds the dims' values alone
                if type(dim) is not int:
                    starts = ()
                    break
            else:
                key = (dtype, lod, persistable, feed, parameter, stop, tuple(shape))
                try:   # a subscript, cheaper than .get() on a hit
                    starts, body, made_dtype, made_lod, made_persistable, made_feed, made_parameter, made_stop = \
                        bodies[key]
                except KeyError:
                    starts, body = self._dense_entry(var)
                    bodies[key] = (starts, body, dtype, lod, persistable, feed, parameter, stop)
                else:
                    if not (made_dtype is dtype and made_lod is lod and made_persistable is persistable
                            and made_feed is feed and made_parameter is parameter and made_stop is stop):
                        starts = ()   # equal values of other types, or a dtype or lod level not the same object
            try:   # no starts where the body's writer refused the var, none at its name's size where it is long
                data = name.encode()
                start = starts[len(data)]
            except (UnicodeError, IndexError):
                pieces.append(self.framed_var(var))
                continue
            pieces.append(start)   # three appends, which the interpreter specialises: cheaper than += a tuple
            pieces.append(data)
            pieces.append(body)
        return pieces

    def _dense_entry(self, var: VarDesc) -> tuple[list | tuple, bytes]:
        """A dense var's body, and its starts by its name's size (tag, length, the name's tag and length; the sizes
        that keep the var's length in one byte), shared by the bodies of one size; no starts: framed_var writes it."""
        body = _dense_body_or_empty(var)
        if not body:
            return (), b""
        starts = self._var_starts.get(len(body))
        if starts is None:
            starts = self._var_starts[len(body)] = [_VAR_STARTS[2 + size + len(body)] + SMALL[size]
                                                    for size in range(max(0, 126 - len(body)))]
        return starts, body

    def framed_var(self, var: VarDesc) -> bytes:
        """The var as the BlockDesc's field 3: tag, length, then its bytes."""
        try:
            return length_prefixed(b"\x1a", self.plain_var(var))
        except (Unusual, TypeError, ValueError, UnicodeError):
            return length_prefixed(b"\x1a", _by_message(var))

    def plain_var(self, var: VarDesc) -> bytes:
        """The var's bytes, or Unusual (or TypeError, ...) where the message path must write it."""
        if var.raw_type is None and var.type == _DENSE_TENSOR and var.dtype is not None and not var.attrs:
            return length_prefixed(b"\x0a", as_text(var.name)) + dense_var_body(var)
        return other_var(var)

    # ------------------------------------------------------------ op
    def _write_slot(self, parts: list, tag: bytes, slot: str, args: list, starts: dict) -> None:
        """A slot _op_run leaves: a one-argument slot whose start is not cached yet, or any other."""
        if len(args) == 1:
            data = as_text(args[0])
            size = len(data)
            if size < 128:
                by_size = starts.get(slot) or starts.setdefault(slot, [None] * 128)
                parts.append(by_size[size] or self._slot_start(tag, slot, size, by_size))
                parts.append(data)
                return
        parts.append(self._slot(tag, slot, args))


    def _slot(self, tag: bytes, slot: str, args: list) -> bytes:
        """An OpDesc.Var (a slot and its arguments), tagged as the OpDesc's field 1 or 2."""
        body = self._params.get(slot) or _cached(self._params, b"\x0a", slot)
        for name in args:
            data = as_text(name)
            body += b"\x12" + varint(len(data)) + data
        return tag + varint(len(body)) + body

    def _slot_start(self, tag: bytes, slot: str, size: int, by_size: list) -> bytes:
        """A one-argument slot's field up to its argument's bytes, ``size`` (< 128) of them."""
        param = self._params.get(slot) or _cached(self._params, b"\x0a", slot)
        start = by_size[size] = tag + varint(len(param) + 2 + size) + param + b"\x12" + SMALL[size]
        return start


def _by_message(item: VarDesc | OpDesc) -> bytes:
    """A var or op the plain encoder leaves, written through protobuf's message (imported only then)."""
    from ..proto import framework_pb2 as pb
    from .protobuf import _op_to_proto, _var_to_proto
    msg, fill = (pb.VarDesc(), _var_to_proto) if isinstance(item, VarDesc) else (pb.OpDesc(), _op_to_proto)
    fill(item, msg)
    return msg.SerializeToString(deterministic=True)


def _dense_body_or_empty(var: VarDesc) -> bytes:
    """A dense var's body, or b"" where the var is left to Encoder.framed_var (alike for every var of its key)."""
    try:
        return dense_var_body(var)
    except (Unusual, TypeError, ValueError):
        return b""


def _cached_frame(cache: dict, tag: bytes, size: int) -> bytes:
    frame = cache[size] = tag + varint(size)
    return frame


def _cached(cache: dict, tag: bytes, text) -> bytes:
    encoded = cache[text] = text_field(tag, text)
    return encoded


def encode_program(program: Program) -> bytes:
    chunks = Encoder().program(program)
    return b"".join(chunks)   # joined once the encoder and its caches are freed: the peak holds one or the other
