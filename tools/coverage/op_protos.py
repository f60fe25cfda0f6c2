"""Paddle's own description of every op type the rows use (slots with their flags, attributes with
their defaults), for the implementers: tests/data/paddle/layers/op_protos.json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from paddle.base import core
from paddle.base.framework import OpProtoHolder

FRAMEWORK_ATTRS = frozenset({"op_role", "op_role_var", "op_namescope", "op_callstack", "op_device",
                             "with_quant_attr"})


def slot_flags(slot, names: tuple[str, ...]) -> str:
    return ",".join(name for name in names if getattr(slot, name, False))


def plain(value):
    """A default as JSON: floats are float32 in Paddle (0.2 reads 0.200000003), so to 7 digits."""
    if isinstance(value, float):
        return float(f"{np.float32(value):.7g}")
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def describe(op_type: str) -> dict | None:
    try:
        proto = OpProtoHolder.instance().get_op_proto(op_type)
    except ValueError:
        return None
    extra = set(core.get_op_extra_attrs(op_type)) | FRAMEWORK_ATTRS
    defaults = core.get_op_attrs_default_value(op_type.encode())
    return {
        "inputs": {s.name: slot_flags(s, ("duplicable", "dispensable")) for s in proto.inputs if not s.extra},
        "outputs": {s.name: slot_flags(s, ("duplicable", "dispensable", "intermediate"))
                    for s in proto.outputs if not s.extra},
        "attrs": {a.name: plain(defaults.get(a.name)) for a in proto.attrs if a.name not in extra and not a.extra},
    }


def write(out: Path) -> None:
    """The protos of every op type named in the row fixtures' meta.json files under ``out``."""
    types = set()
    for meta_file in out.glob("*/meta.json"):
        meta = json.loads(meta_file.read_text())
        types |= set(meta.get("ops_forward", [])) | set(meta.get("ops_backward", []))
    protos = {t: describe(t) for t in sorted(types)}
    (out / "op_protos.json").write_text(json.dumps({t: p for t, p in protos.items() if p}, indent=1) + "\n")
