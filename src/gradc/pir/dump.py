"""A gradc.pir.graph.Module -> PIR JSON bytes, laid out as Paddle 3.3.1 writes it: results numbered
1, 2, ... and block arguments -1, -2, ... in write order, builtin.parameter in its compact form, keys
sorted, no spaces. The same module gives the same bytes."""

from __future__ import annotations

import json

from . import schema
from .codec import encode_attr, encode_type
from .graph import Attr, Block, Module, Op, Value


def dumps(module: Module) -> bytes:
    writer = _Writer()
    doc = {"base_code": {"magic": schema.MAGIC, "version": module.version, "trainable": module.trainable},
           "program": {schema.REGIONS: [{schema.ID: writer.region_name(),
                                         schema.BLOCKS: [writer.block(module.body)]}]}}
    # the writer builds a tree (shared leaves, no cycles): json's check for cycles took a third of the time
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False, check_circular=False).encode()


_PARAMETER_FLAGS = ("is_distributed", "is_parameter", "need_clip", "parameter_name", "trainable")


class _Writer:
    def __init__(self):
        self.ids: dict[Value, int] = {}
        self.next_result, self.next_arg, self.regions, self.blocks = 1, -1, 0, 0
        self.shared: dict = {}   # a program has a few types and result-flag arrays: each encoded once

    def _once(self, key, encode) -> dict:
        encoded = self.shared.get(key)
        if encoded is None:
            encoded = self.shared[key] = encode()
        return encoded

    def region_name(self) -> str:
        self.regions += 1
        return f"region_{self.regions - 1}"

    def block(self, block: Block) -> dict:
        name = f"block_{self.blocks}"
        self.blocks += 1
        args = []
        for value in block.args:
            self.ids[value] = self.next_arg
            args.append({schema.ID: self.next_arg, schema.TYPE: self.type(value.type)})
            self.next_arg -= 1
        out = {schema.ID: name, schema.ARGS: args}
        if block.kwargs:   # numbered after the args, as Paddle's writer numbers them (it then stores the args here)
            out[schema.KWARGS] = []
            for key, value in block.kwargs.items():
                self.ids[value] = self.next_arg
                out[schema.KWARGS].append({schema.ID: self.next_arg, schema.TYPE: self.type(value.type),
                                           schema.KWARG_NAME: key})
                self.next_arg -= 1
        out[schema.OPS] = [self.op(op) for op in block.ops]
        return out

    def result(self, value: Value) -> dict:
        self.ids[value] = self.next_result
        self.next_result += 1
        return {schema.VALUE_ID: self.ids[value], schema.TYPE: self.type(value.type)}

    def type(self, type_) -> dict:
        return self._once(("type", type_), lambda: encode_type(type_))

    def op(self, op: Op) -> dict:
        if op.name == "builtin.parameter":
            return self.parameter(op)
        out = {schema.ID: schema.compressed_name(op.name),
               schema.OPERANDS: [{schema.VALUE_ID: 0 if v is None else self.ids[v]} for v in op.operands],
               schema.ATTRS: [{schema.NAME: name, schema.ATTR_TYPE: encode_attr(attr)}
                              for name, attr in op.attrs.items()]}
        out[schema.RESULTS] = [self.result(v) for v in op.results]   # numbered before the regions, as Paddle does
        if op.regions:
            out[schema.REGIONS] = [{schema.ID: self.region_name(), schema.BLOCKS: [self.block(b) for b in r.blocks]}
                                   for r in op.regions]
        out[schema.RESULT_ATTRS] = self.result_flags(op.results)
        return out

    def parameter(self, op: Op) -> dict:
        value = op.results[0]
        return {schema.ID: schema.PARAMETER_OP,
                schema.ATTRS: [int(op.attr("is_distributed", False)), int(op.attr("is_parameter", True)),
                               int(op.attr("need_clip", True)), op.attr("parameter_name")],
                schema.DIST_ATTRS: [{schema.NAME: name, schema.ATTR_TYPE: encode_attr(attr)}
                                    for name, attr in op.attrs.items() if name not in _PARAMETER_FLAGS],
                schema.QUANT_ATTRS: [], schema.RESULTS: self.result(value),
                schema.RESULT_ATTRS: [int(bool(value.persistable)), int(bool(value.stop_gradient)),
                                      int(op.attr("trainable", True))]}


    def result_flags(self, results: list[Value]) -> list[dict]:
        flags = []
        if any(v.persistable for v in results):
            flags.append(self.flag_array("persistable", tuple(bool(v.persistable) for v in results)))
        if results:
            flags.append(self.flag_array("stop_gradient", tuple(bool(v.stop_gradient) for v in results)))
        return flags

    def flag_array(self, name: str, values: tuple[bool, ...]) -> dict:
        return self._once(("flags", name, values), lambda: {schema.NAME: name, schema.ATTR_TYPE: encode_attr(
            Attr("a_array", [Attr("a_bool", v) for v in values]))})
