"""Dump Paddle's legacy op definitions (OpProto: slots with their flags, attributes with type and default,
plus the grad ops each grad maker emits) for the op types gradc registers, the op types Paddle's own
layers, losses, optimizers, RNNs, control flow and vision models emit, and their grad ops, into
tests/data/paddle/op_protos.json. Needs paddlepaddle 3.3.1 (legacy IR); gradc never imports Paddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_op_protos.py [out.json]

docs/paddle-op-protos.md describes the file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import paddle
import paddle_emitted_ops
from paddle.base import core
from paddle.base.proto import framework_pb2 as fp

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "paddle" / "op_protos.json"
GRAD_SUFFIXES = ("_grad", "_grad_grad", "_double_grad", "_triple_grad")
SLOT_FLAGS = ("duplicable", "dispensable", "intermediate", "extra", "quant")
ATTR_FLAGS = ("extra", "generated", "quant", "support_tensor")
# Attributes every legacy op carries (OpProtoAndCheckerMaker adds them); recorded once in the header.
COMMON_ATTRS = ("op_role", "op_role_var", "op_namescope", "op_callstack", "op_device", "with_quant_attr")
TYPED_SETTERS = {"INT": ("_set_int32_attr", 0), "FLOAT": ("_set_float32_attr", 0.0), "STRING": ("_set_str_attr", ""),
                 "BOOLEAN": ("_set_bool_attr", False), "LONG": ("_set_int64_attr", 0),
                 "FLOAT64": ("_set_float64_attr", 0.0), "INTS": ("_set_int32s_attr", []),
                 "FLOATS": ("_set_float32s_attr", []), "STRINGS": ("_set_strs_attr", []),
                 "BOOLEANS": ("_set_bools_attr", []), "LONGS": ("_set_int64s_attr", []),
                 "FLOAT64S": ("_set_float64s_attr", [])}


def gradc_op_types() -> list[str]:
    """The op types gradc registers, read from gradc's own venv (Paddle's venv does not have gradc)."""
    code = "import gradc.registry as r; print('\\n'.join(sorted(r.OPS)))"
    out = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-c", code], check=True, capture_output=True,
                         text=True, cwd=ROOT)
    return out.stdout.split()


def load_protos() -> dict[str, fp.OpProto]:
    protos = (fp.OpProto.FromString(raw) for raw in core.get_all_op_protos())
    return {p.type: p for p in protos}


def json_value(value):
    """Defaults as JSON: floats stay the Python float Paddle returns (a float32 attr comes back as the
    float32 value widened to double, e.g. 0.02 -> 0.019999999552965164)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return repr(value)


def type_of_value(value) -> str | None:
    """AttrType name of an extra attribute that only op_compat's extra map knows (no OpProto entry)."""
    scalar = {bool: "BOOLEAN", int: "INT", float: "FLOAT", str: "STRING"}
    if type(value) in scalar:
        return scalar[type(value)]
    if isinstance(value, list) and value and type(value[0]) in scalar:
        return scalar[type(value[0])] + "S"
    return None


def slots(vars_) -> list[dict]:
    return [{"name": v.name, **{f: True for f in SLOT_FLAGS if getattr(v, f)}} for v in vars_]


def add_extra_attrs(attrs: dict, op_type: str) -> None:
    for name, value in sorted(core.get_op_extra_attrs(op_type).items()):
        if name not in attrs:
            attrs[name] = {"type": type_of_value(value), "default": json_value(value), "extra": True,
                           "from_extra_map": True}


def proto_record(proto: fp.OpProto) -> dict:
    defaults = core.get_op_attrs_default_value(proto.type.encode())
    attrs = {}
    for a in proto.attrs:
        if a.name in COMMON_ATTRS:
            continue
        entry = {"type": fp.AttrType.Name(a.type), **{f: True for f in ATTR_FLAGS if getattr(a, f)}}
        if a.name in defaults and defaults[a.name] is not None:
            entry["default"] = json_value(defaults[a.name])
        attrs[a.name] = entry
    add_extra_attrs(attrs, proto.type)
    return {"inputs": slots(proto.inputs), "outputs": slots(proto.outputs), "attrs": attrs}


class GradProbe:
    """Asks Paddle's grad makers which grad ops they emit, on a one-op block whose every slot holds one
    var named like the slot (so an emitted desc reads as slot -> forward slot names)."""

    def __init__(self):
        self.program = paddle.static.Program()
        self.block = self.program.global_block()

    def _declare(self, names):
        for name in names:
            if not self.block.desc.has_var(name.encode()):
                self.block.desc.var(name.encode())

    def _sub_blocks(self, desc, attr_names_types) -> list:
        grad_blocks = []
        for name, type_name in attr_names_types:
            if type_name in ("BLOCK", "BLOCKS"):
                sub = self.program._create_block()
                self.program._rollback()
                if type_name == "BLOCK":
                    desc.set_block_attr(name, sub.desc)
                else:   # two: pylayer's blocks are [forward, the user's backward], and its maker needs both
                    second = self.program._create_block()
                    self.program._rollback()
                    desc.set_blocks_attr(name, [sub.desc, second.desc])
                grad_blocks.append(self.program._create_block().desc)
                self.program._rollback()
        return grad_blocks

    def forward_desc(self, proto: fp.OpProto):
        desc = self.block.desc.append_op()
        desc.set_type(proto.type)
        for setter, vars_ in ((desc.set_input, proto.inputs), (desc.set_output, proto.outputs)):
            for v in vars_:
                self._declare([v.name])
                setter(v.name, [v.name])
        typed = [(a.name, fp.AttrType.Name(a.type)) for a in proto.attrs]
        grad_blocks = self._sub_blocks(desc, typed)
        defaults = core.get_op_attrs_default_value(proto.type.encode())
        for name, type_name in typed:
            if name not in defaults and type_name in TYPED_SETTERS:
                setter, value = TYPED_SETTERS[type_name]
                getattr(desc, setter)(name, value)
        desc.check_attrs()
        return desc, grad_blocks

    def grad_descs(self, desc, grad_blocks) -> list:
        self._declare(desc.input_arg_names() + desc.output_arg_names())
        made, _ = core.get_grad_op_desc(desc, set(), grad_blocks)
        return made

    def grad_of_grad(self, grad_desc) -> list:
        desc = self.block.desc.append_op()
        desc.copy_from(grad_desc)
        return self.grad_descs(desc, [])


def desc_record(desc) -> dict:
    return {"type": desc.type(), "inputs": {s: desc.input(s) for s in sorted(desc.input_names())},
            "outputs": {s: desc.output(s) for s in sorted(desc.output_names())}}


def grad_op_record(desc, maker_rec: dict) -> dict:
    """A grad op (no OpProto in 3.3.1) as the maker that emits it writes it: its slots (duplicable where the
    maker's slot of the same name, less its @GRAD suffixes, is; extra where the maker's slot of the same
    name is), its attributes with the values the maker sets, flagged extra where the maker's are.
    Attributes the maker's op requires (no default) get no default here either."""
    maker_slots = {s["name"]: s for s in maker_rec["inputs"] + maker_rec["outputs"]}

    def slot(name):
        flags = {"duplicable": maker_slots.get(name.split("@GRAD")[0], {}).get("duplicable"),
                 "extra": maker_slots.get(name, {}).get("extra")}
        return {"name": name, **{f: True for f, on in flags.items() if on}}

    attrs = {}
    for name in sorted(desc.attr_names()):
        if name in COMMON_ATTRS:
            continue
        type_name = fp.AttrType.Name(int(desc.attr_type(name)))
        maker_attr = maker_rec["attrs"].get(name, {})
        entry = {"type": type_name, **({"extra": True} if maker_attr.get("extra") else {})}
        if type_name not in ("BLOCK", "BLOCKS", "VAR", "VARS") and (not maker_attr or "default" in maker_attr):
            entry["default"] = json_value(desc.attr(name))
        attrs[name] = entry
    return {"proto": False, "inputs": [slot(s) for s in sorted(desc.input_names())],
            "outputs": [slot(s) for s in sorted(desc.output_names())], "attrs": attrs}


class Dump:
    """Records ops and, transitively, the grad ops their makers emit and the registered grad suffixes."""

    def __init__(self):
        self.protos = load_protos()
        self.registered = set(core.get_all_op_names())
        self.probe = GradProbe()
        self.ops: dict[str, dict] = {}
        self.made_by: dict[str, tuple[str, object]] = {}  # grad op type -> (op whose maker emits it, its desc)
        self.pending: set[str] = set()

    def add(self, types) -> None:
        self.pending |= set(types) - set(self.ops)
        while self.pending:
            known = sorted(t for t in self.pending if t in self.protos or t in self.made_by)
            for op_type in known or sorted(self.pending):
                self.pending.discard(op_type)
                self.ops[op_type] = self.record(op_type)

    def record(self, op_type: str) -> dict:
        rec = {"registered": op_type in self.registered}
        desc, grad_blocks = None, []
        if op_type in self.protos:
            rec.update(proto_record(self.protos[op_type]))
            try:
                desc, grad_blocks = self.probe.forward_desc(self.protos[op_type])
            except Exception as e:  # noqa: BLE001 - an attribute checker rejects the probe's values: say so
                rec["probe_error"] = str(e).strip().splitlines()[0][:200]
        elif op_type in self.made_by:
            maker_of, desc = self.made_by[op_type]
            rec.update(grad_op_record(desc, self.ops[maker_of]), made_by=maker_of)
            add_extra_attrs(rec["attrs"], op_type)
        else:
            rec["proto"] = False
        if desc is not None and core.has_grad_op_maker(op_type):
            self.add_grad_ops(rec, op_type, desc, grad_blocks)
        self.pending |= {op_type + s for s in GRAD_SUFFIXES if op_type + s in self.registered} - set(self.ops)
        return rec

    def add_grad_ops(self, rec: dict, op_type: str, desc, grad_blocks) -> None:
        try:
            made = (self.probe.grad_descs(desc, grad_blocks) if op_type in self.protos
                    else self.probe.grad_of_grad(desc))
        except Exception as e:  # noqa: BLE001 - some makers need real var shapes or sub-blocks; say so
            rec["grad_ops_error"] = str(e).strip().splitlines()[0][:200]
            return
        rec["grad_ops"] = [desc_record(g) for g in made]
        for g in made:
            self.made_by.setdefault(g.type(), (op_type, g))
            if g.type() not in self.ops:
                self.pending.add(g.type())


def common_attrs(protos: dict[str, fp.OpProto]) -> dict:
    proto = protos["relu"]
    defaults = core.get_op_attrs_default_value(b"relu")
    return {a.name: {"type": fp.AttrType.Name(a.type), "default": json_value(defaults[a.name]), "extra": True}
            for a in proto.attrs if a.name in COMMON_ATTRS}


def write(path: Path, header: dict, sources: dict, failed: dict, ops: dict) -> None:
    def line(key, value):
        return f"{json.dumps(key)}: {json.dumps(value, sort_keys=True, separators=(',', ':'))}"

    def section(name, entries):
        return f'"{name}": {{\n' + ",\n".join(line(k, v) for k, v in sorted(entries.items())) + "\n}"

    parts = [line(k, v) for k, v in sorted(header.items())]
    parts += [section("sources", sources), section("sources_failed", failed), section("ops", ops)]
    path.write_text("{\n" + ",\n".join(parts) + "\n}\n")


def main(out: Path) -> None:
    gradc = gradc_op_types()
    sources, failed = paddle_emitted_ops.collect(log=lambda msg: print(msg, file=sys.stderr))
    dump = Dump()
    dump.add(gradc)
    dump.add(t for types in sources.values() for t in types)
    dump.add(sorted(dump.protos))   # every legacy op Paddle registers, so new gradc ops find theirs
    header = {
        "paddle_version": paddle.__version__, "paddle_commit": paddle.version.commit,
        "made_by": "FLAGS_enable_pir_api=0 python tools/paddle_op_protos.py (see docs/paddle-op-protos.md)",
        "selection": "every legacy op type Paddle registers (with an OpProto), op types gradc registers, op types "
                     "the cases in tools/paddle_emitted_ops.py emit (sources), and the grad ops of these that Paddle "
                     "registers or its grad makers emit",
        "common_attrs": common_attrs(dump.protos),
    }
    write(out, header, sources, failed, dump.ops)
    print(f"{out}: {len(dump.ops)} ops, {out.stat().st_size} bytes; {len(sources)} sources, {len(failed)} failed")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
