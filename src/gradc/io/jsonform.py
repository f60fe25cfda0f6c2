"""The protobuf JSON form of a ProgramDesc (.pbjson) with 64-bit integers written as numbers: protobuf's own
printer quotes them ("dims": ["32", "16"]), which reads back but is not what a person expects; its parser takes
numbers as well."""

from __future__ import annotations

import json

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor

_INT64 = {FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT64,
          FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED64}


def message_to_json(message) -> bytes:
    tree = json_format.MessageToDict(message, preserving_proto_field_name=True)
    _numbers(message.DESCRIPTOR, tree)
    return json.dumps(tree, indent=1).encode("utf-8") + b"\n"


def _numbers(descriptor, tree: dict) -> None:
    for field in descriptor.fields:
        if field.name not in tree:
            continue
        value = tree[field.name]
        if field.type in _INT64:
            tree[field.name] = [int(v) for v in value] if isinstance(value, list) else int(value)
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            for item in value if isinstance(value, list) else [value]:
                _numbers(field.message_type, item)
