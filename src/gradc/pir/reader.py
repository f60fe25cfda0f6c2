"""Bytes of a PIR JSON file -> a checked gradc.pir.graph.Module.

Every error is a FormatError that names where (region/block/op index and PIR op name) and what. The
walk over nested regions is iterative, the file size is capped, and JSON nesting beyond Python's
recursion limit is reported, so huge or deeply nested files cannot exhaust the stack.
"""

from __future__ import annotations

import json

from ..errors import FormatError
from ..limits import LIMITS
from . import schema
from .codec import CodecError, decode_attr, decode_type
from .graph import Attr, Block, Module, Op, Region, Value

MAX_BYTES = 256 << 20   # PIR JSON holds no weights: real programs are far smaller
JSON_EXPANSION = 32     # parsed JSON takes up to ~25 times its text (a list of empty objects): measured
MAX_NESTING = 64        # regions inside ops inside regions ...; real control flow nests a few levels


def parse_json(data: bytes, source: str, max_bytes: int | None = None):
    """The JSON document; files whose parse could outgrow the memory limit (--max-memory) are refused first."""
    if max_bytes is None:
        max_bytes = min(MAX_BYTES, LIMITS.max_bytes // JSON_EXPANSION)
    if len(data) > max_bytes:
        raise FormatError(f"{source}: {len(data):,} bytes is more than the {max_bytes:,} bytes gradc reads as PIR "
                          f"JSON (parsing takes up to {JSON_EXPANSION} times the text; --max-memory sets the limit)")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise FormatError(f"{source}: not a PIR JSON file: the bytes are not UTF-8 text") from None
    except RecursionError:
        raise FormatError(f"{source}: not a readable PIR JSON file: nested too deeply") from None
    except ValueError as exc:
        raise FormatError(f"{source}: not valid JSON: {exc}") from None


def read_module(data: bytes, source: str = "<bytes>", max_bytes: int | None = None) -> Module:
    doc = parse_json(data, source, max_bytes)
    if not isinstance(doc, dict) or not isinstance(doc.get("base_code"), dict):
        raise FormatError(f"{source}: not a PIR program: no 'base_code' object at the top")
    base = doc["base_code"]
    if base.get("magic") != schema.MAGIC:
        raise FormatError(f"{source}: not a PIR program: base_code.magic is {base.get('magic')!r}, not 'pir'")
    version = base.get("version")
    if version not in schema.KNOWN_VERSIONS or isinstance(version, bool):
        known = ", ".join(map(str, sorted(schema.KNOWN_VERSIONS)))
        raise FormatError(f"{source}: PIR version {version!r} is not one gradc reads (known: {known}; "
                          f"Paddle 3.3.1 writes {schema.WRITE_VERSION})")
    program = doc.get("program")
    regions = program.get(schema.REGIONS) if isinstance(program, dict) else None
    if not isinstance(regions, list) or len(regions) != 1:
        raise FormatError(f"{source}: program.regions must hold exactly one region")
    blocks = regions[0].get(schema.BLOCKS) if isinstance(regions[0], dict) else None
    if not isinstance(blocks, list) or len(blocks) != 1:
        raise FormatError(f"{source}: region 0 of the program must hold exactly one block")
    body = _Walker(source).walk(blocks[0])
    return Module(body, version, bool(base.get("trainable", False)))


class _Walker:
    """Reads blocks depth first with an explicit stack; values are visible in the block that
    defines them and in the regions nested in it, as in Paddle's reader."""

    def __init__(self, source: str):
        self.source = source
        self.values: dict[int, Value] = {}

    def fail(self, where: str, message: str) -> FormatError:
        return FormatError(f"{self.source}: {where}: {message}")

    def walk(self, top_json) -> Block:
        """Each block is a generator that yields the blocks nested in its ops; the loop runs a
        yielded block to its end before resuming its parent, so depth costs heap, not stack."""
        top = Block()
        stack = [self._block(top_json, top, "region 0, block 0")]
        while stack:
            nested = next(stack[-1], None)
            if nested is None:
                stack.pop()
            elif len(stack) > MAX_NESTING:
                raise self.fail(nested[1], f"regions nested more than {MAX_NESTING} deep")
            else:
                stack.append(nested[0])
        return top

    def _block(self, block_json, block: Block, where: str):
        if not isinstance(block_json, dict) or not isinstance(block_json.get(schema.OPS), list):
            raise self.fail(where, "a block must be an object with an 'ops' list")
        defined: list[int] = []
        self._read_args(block_json, block, where, defined)
        for index, op_json in enumerate(block_json[schema.OPS]):
            op, result_json = self._read_op(op_json, f"{where}, op {index}")
            block.ops.append(op)
            for r, region in enumerate(op.regions):
                blocks_json = op_json[schema.REGIONS][r].get(schema.BLOCKS)
                if not isinstance(blocks_json, list):
                    raise self.fail(op.where, f"region {r} has no 'blocks' list")
                for b, inner_json in enumerate(blocks_json):
                    inner = Block()
                    region.blocks.append(inner)
                    inner_where = f"{op.where} > region {r}, block {b}"
                    yield self._block(inner_json, inner, inner_where), inner_where
            self._define_results(op, result_json, defined)
        for value_id in defined:
            del self.values[value_id]

    def _read_args(self, block_json, block: Block, where: str, defined: list) -> None:
        for position, arg in enumerate(block_json.get(schema.ARGS) or []):
            value_id = arg.get(schema.ID) if isinstance(arg, dict) else None
            block.args.append(self._new_value(value_id, arg, f"{where}, argument {position}", defined, None, position))
        for position, arg in enumerate(block_json.get(schema.KWARGS) or []):
            value_id = arg.get(schema.ID) if isinstance(arg, dict) else None
            if value_id in defined:  # Paddle 3.3.1 writes the positional args under "kwargs" too
                continue
            value = self._new_value(value_id, arg, f"{where}, keyword argument {position}", defined, None, position)
            block.kwargs[str(arg.get(schema.KWARG_NAME))] = value

    def _new_value(self, value_id, value_json, where: str, defined: list, op, index: int) -> Value:
        if not isinstance(value_id, int) or isinstance(value_id, bool) or value_id == 0:
            raise self.fail(where, f"value id {value_id!r} is not a non-zero integer")
        if value_id in self.values:
            raise self.fail(where, f"value %{value_id} is defined twice")
        try:
            type_ = decode_type(value_json.get(schema.TYPE))
        except CodecError as exc:
            raise self.fail(where, str(exc)) from None
        value = Value(value_id, type_, op, index)
        self.values[value_id] = value
        defined.append(value_id)
        return value

    def _read_op(self, op_json, where: str) -> tuple[Op, list]:
        if not isinstance(op_json, dict) or not isinstance(op_json.get(schema.ID), str):
            raise self.fail(where, "an op must be an object with a '#' name")
        if op_json[schema.ID] == schema.PARAMETER_OP:
            return self._read_parameter(op_json, where)
        op = Op(schema.full_name(op_json[schema.ID]), where=where)
        where = f"{where} ({op.name})"
        op.where = where
        for position, operand in enumerate(_list(op_json, schema.OPERANDS, where, self)):
            value_id = operand.get(schema.VALUE_ID) if isinstance(operand, dict) else None
            if value_id == 0:
                op.operands.append(None)
            elif isinstance(value_id, int) and not isinstance(value_id, bool) and value_id in self.values:
                op.operands.append(self.values[value_id])
            elif isinstance(value_id, int) and value_id < 0:
                raise self.fail(where, f"operand {position} refers to block argument %{value_id}, which the file "
                                       f"does not define (Paddle 3.3.1's writer leaves a block's keyword arguments "
                                       f"out: ir_serialize.cc stores its args under 'kwargs')")
            else:
                raise self.fail(where, f"operand {position} refers to %{value_id}, which no earlier op or "
                                       f"enclosing block defines")
        op.attrs = self._read_attrs(_list(op_json, schema.ATTRS, where, self), where)
        regions = op_json.get(schema.REGIONS, [])
        if not isinstance(regions, list) or not all(isinstance(r, dict) for r in regions):
            raise self.fail(where, "'regions' must be a list of objects")
        op.regions = [Region() for _ in regions]
        results = _list(op_json, schema.RESULTS, where, self)
        return op, (results, self._read_attrs(op_json.get(schema.RESULT_ATTRS) or [], where))

    def _read_parameter(self, op_json, where: str) -> tuple[Op, list]:
        where = f"{where} (builtin.parameter)"
        flags = op_json.get(schema.ATTRS)
        if not (isinstance(flags, list) and len(flags) == 4 and isinstance(flags[3], str)):
            raise self.fail(where, "A must be [is_distributed, is_parameter, need_clip, name]")
        op = Op("builtin.parameter", where=where, attrs={
            "is_distributed": Attr("a_bool", bool(flags[0])), "is_parameter": Attr("a_bool", bool(flags[1])),
            "need_clip": Attr("a_bool", bool(flags[2])), "parameter_name": Attr("a_str", flags[3])})
        result_flags = op_json.get(schema.RESULT_ATTRS) or [1, 0, 1]   # a file written without them: trainable
        if not (isinstance(result_flags, list) and len(result_flags) == 3):
            raise self.fail(where, "OA must be [persistable, stop_gradient, trainable]")
        op.attrs["trainable"] = Attr("a_bool", bool(result_flags[2]))
        op.attrs |= self._read_attrs(op_json.get(schema.DIST_ATTRS) or [], where)   # auto-parallel: op_dist_attr
        result_attrs = {"persistable": Attr("a_array", [Attr("a_bool", bool(result_flags[0]))]),
                        "stop_gradient": Attr("a_array", [Attr("a_bool", bool(result_flags[1]))])}
        return op, ([op_json.get(schema.RESULTS)], result_attrs)

    def _read_attrs(self, attrs_json, where: str) -> dict[str, Attr]:
        attrs = {}
        if not isinstance(attrs_json, list):
            raise self.fail(where, "attributes must be a list")
        for entry in attrs_json:
            name = entry.get(schema.NAME) if isinstance(entry, dict) else None
            if not isinstance(name, str):
                raise self.fail(where, f"an attribute has no name: {entry!r:.80}")
            try:
                attrs[name] = decode_attr(entry.get(schema.ATTR_TYPE))
            except CodecError as exc:
                raise self.fail(where, f"attribute '{name}': {exc}") from None
        return attrs

    def _define_results(self, op: Op, result_json, defined: list) -> None:
        results, result_attrs = result_json
        flags = {name: attr.plain() for name, attr in result_attrs.items()
                 if name in ("stop_gradient", "persistable") and attr.kind == "a_array"}
        for index, result in enumerate(results):
            if not isinstance(result, dict):
                raise self.fail(op.where, f"result {index} is not an object")
            value = self._new_value(result.get(schema.VALUE_ID), result, f"{op.where}, result {index}",
                                    defined, op, index)
            for name, values in flags.items():
                if index < len(values):
                    setattr(value, name, bool(values[index]))
            op.results.append(value)


def _list(op_json: dict, key: str, where: str, walker: _Walker) -> list:
    value = op_json.get(key, [])
    if not isinstance(value, list):
        raise walker.fail(where, f"'{key}' must be a list")
    return value
