"""Compare gradc's op registry with Paddle's op definitions (tests/data/paddle/op_protos.json, made by
tools/paddle_op_protos.py): per op gradc registers, the slots and attributes that differ, and the op
types Paddle's layers emit that gradc does not register yet. Runs in gradc's venv; no Paddle needed.

    .venv/bin/python tools/op_conformance_report.py [op_protos.json]
"""

from __future__ import annotations

import json
import struct
import sys
from collections import defaultdict
from pathlib import Path

from gradc import registry

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "paddle" / "op_protos.json"
PY_TYPES = {"INT": int, "LONG": int, "FLOAT": (float, int), "FLOAT64": (float, int), "STRING": str,
            "BOOLEAN": bool, "INTS": list, "LONGS": list, "FLOATS": list, "FLOAT64S": list, "STRINGS": list,
            "BOOLEANS": list}
SOURCE_GROUPS = (("layers", "nn."), ("losses", "F."), ("optimizers", "optimizer."), ("regularizers", "regularizer."),
                 ("control flow", "static.nn."), ("vision models", "vision.models."))


def names(slots) -> list[str]:
    """Slot names from gradc (plain names today; objects with .name after the typed-OpDef refactor)."""
    return [getattr(s, "name", s) for s in slots]


def gradc_default(value):
    return getattr(value, "default", value)


def as_float32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def same_default(paddle_type: str, paddle_value, ours) -> bool:
    if paddle_type == "FLOAT" and isinstance(ours, (int, float)) and not isinstance(ours, bool):
        return as_float32(ours) == paddle_value
    if paddle_type == "FLOATS" and isinstance(ours, (list, tuple)):
        return [as_float32(v) for v in ours] == paddle_value
    if isinstance(ours, tuple):
        ours = list(ours)
    return ours == paddle_value and type(ours) is type(paddle_value)


def type_fits(paddle_type: str, ours) -> bool:
    expected = PY_TYPES.get(paddle_type)
    if expected is None or ours is None:
        return True
    if isinstance(ours, bool) and paddle_type != "BOOLEAN":
        return False
    return isinstance(ours, expected) or (expected is list and isinstance(ours, tuple))


def slot_findings(theirs: dict, opdef) -> list[str]:
    found = []
    for side in ("inputs", "outputs"):
        ours = set(names(getattr(opdef, side)))
        paddle = {s["name"]: s for s in theirs.get(side, [])}
        if missing := [n for n, s in paddle.items() if n not in ours and not s.get("extra")]:
            found.append(f"{side} Paddle has, gradc lacks: {', '.join(missing)}")
        if missing_extra := [n for n, s in paddle.items() if n not in ours and s.get("extra")]:
            found.append(f"extra {side} Paddle has, gradc lacks: {', '.join(missing_extra)}")
        if unknown := sorted(ours - set(paddle)):
            found.append(f"{side} gradc has, Paddle lacks: {', '.join(unknown)}")
        found += flag_findings(paddle, opdef, theirs.get("proto", True))
    return found


def flag_findings(paddle: dict, opdef, has_proto: bool) -> list[str]:
    """Slot flags, where gradc's OpDef has Slot objects (after the typed-OpDef refactor). A grad op's
    dispensable flags are unknown (no OpProto), so only duplicable is compared there."""
    found = []
    for name, slot in getattr(opdef, "slots", {}).items():
        theirs = paddle.get(name)
        for flag in ("duplicable", "dispensable") if has_proto else ("duplicable",):
            ours, paddle_flag = bool(getattr(slot, flag, False)), bool(theirs.get(flag)) if theirs else None
            if theirs is not None and ours != paddle_flag:
                found.append(f"slot {name}: {'' if paddle_flag else 'not '}{flag} in Paddle, "
                             f"{'' if ours else 'not '}in gradc")
    return found


def attr_findings(theirs: dict, opdef) -> list[str]:
    paddle = theirs.get("attrs", {})
    ours = {n: gradc_default(v) for n, v in opdef.attrs.items()}
    found = []
    if missing := [n for n, a in sorted(paddle.items()) if n not in ours and not a.get("extra")]:
        found.append(f"attrs Paddle has, gradc lacks: {', '.join(missing)}")
    if unknown := sorted(set(ours) - set(paddle)):
        found.append(f"attrs gradc has, Paddle lacks: {', '.join(unknown)}")
    if required := sorted(n for n in ours if n in paddle and "default" not in paddle[n] and theirs.get("proto", True)
                          and paddle[n]["type"] not in ("BLOCK", "BLOCKS")):
        found.append(f"attrs Paddle requires (no default), gradc defaults: {', '.join(required)}")
    if extra := sorted(n for n in ours if paddle.get(n, {}).get("extra")):
        found.append(f"attrs gradc has that Paddle marks extra: {', '.join(extra)}")
    wire_types = getattr(opdef, "attr_types", {})
    for n in sorted(set(ours) & set(paddle)):
        a = paddle[n]
        wire = getattr(wire_types.get(n), "name", None)
        if wire and a["type"] and wire != a["type"]:
            found.append(f"attr {n}: type gradc {wire}, Paddle {a['type']}")
        elif not type_fits(a["type"], ours[n]):
            found.append(f"attr {n}: gradc default {ours[n]!r} is not a {a['type']}")
        elif "default" in a and not same_default(a["type"], a["default"], ours[n]):
            found.append(f"attr {n}: default gradc {ours[n]!r}, Paddle {a['default']!r}")
    return found


def grad_findings(op_type: str, theirs: dict, opdef, grad_types_of: dict) -> list[str]:
    paddle_grads = [g["type"] for g in theirs.get("grad_ops", [])]
    if opdef.differentiable and "grad_ops" in theirs and not paddle_grads:
        return ["gradc has a grad maker, Paddle's maker emits nothing"]
    if not opdef.differentiable and paddle_grads and opdef.grad_op_of is None:
        return [f"no grad maker in gradc, Paddle's emits {', '.join(paddle_grads)}"]
    ours = grad_types_of.get(op_type, [])
    if ours and paddle_grads and not set(ours) & set(paddle_grads):
        return [f"grad op gradc {', '.join(ours)}, Paddle {', '.join(paddle_grads)}"]
    return []


def op_findings(ops: dict) -> dict[str, list[str]]:
    grad_types_of = defaultdict(list)
    for t, opdef in registry.OPS.items():
        if opdef.grad_op_of:
            grad_types_of[opdef.grad_op_of].append(t)
    findings = {}
    for op_type, opdef in sorted(registry.OPS.items()):
        theirs = ops.get(op_type)
        if theirs is None or not theirs["registered"]:
            findings[op_type] = ["Paddle 3.3.1 does not register this op type"]
            continue
        found = slot_findings(theirs, opdef) + attr_findings(theirs, opdef)
        found += grad_findings(op_type, theirs, opdef, grad_types_of)
        if theirs.get("proto") is False:
            found = [f"(no OpProto; compared with the desc {theirs.get('made_by', '?')}'s grad maker emits) {f}"
                     for f in found]
        findings[op_type] = found
    return findings


def group_of(source: str) -> str:
    return next((g for g, prefix in SOURCE_GROUPS if source.startswith(prefix)), "other")


def print_missing(sources: dict, failed: dict) -> None:
    by_op = defaultdict(list)
    for source, types in sources.items():
        for t in types:
            if t not in registry.OPS:
                by_op[t].append(source)
    forward = sorted(t for t in by_op if not t.endswith("_grad") and "_grad_" not in t and "_grad2" not in t)
    print(f"\n== Op types Paddle's layers emit that gradc does not register: {len(by_op)} "
          f"({len(forward)} forward/optimizer, {len(by_op) - len(forward)} grad) ==")
    for group, _ in (*SOURCE_GROUPS, ("other", "")):
        in_group = {t: [s for s in srcs if group_of(s) == group] for t, srcs in by_op.items()}
        in_group = {t: srcs for t, srcs in in_group.items() if srcs}
        if not in_group:
            continue
        print(f"\n-- from {group} --")
        for t in sorted(in_group, key=lambda t: (t not in forward, t)):
            srcs = in_group[t]
            more = f" (+{len(srcs) - 4} more)" if len(srcs) > 4 else ""
            print(f"  {t}: {', '.join(srcs[:4])}{more}")
    if failed:
        print("\n-- sources Paddle 3.3.1 cannot build in legacy static mode (not collected) --")
        for source, error in sorted(failed.items()):
            print(f"  {source}: {error[:110]}")


def main(path: Path) -> None:
    data = json.loads(path.read_text())
    ops = data["ops"]
    findings = op_findings(ops)
    clean = [t for t, f in findings.items() if not f]
    print(f"Paddle {data['paddle_version']} op protos: {len(ops)} op types; gradc registers {len(findings)}: "
          f"{len(clean)} match, {len(findings) - len(clean)} differ "
          f"({sum(len(f) for f in findings.values())} findings)")
    for op_type, found in findings.items():
        if found:
            print(f"\n{op_type}")
            for f in found:
                print(f"  - {f}")
    print_missing(data["sources"], data["sources_failed"])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA)
