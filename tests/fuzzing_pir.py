"""JSON-level mutations of Paddle's PIR programs for tests/fuzzing.py: a structural change to one op,
value, type, attribute or region of a real file, and whether the result must be rejected ("load")."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

DEEP, DEEP_REGIONS = "@deep@", "@deep regions@"
KINDS = ["op_name", "dangling", "null_operand", "drop_operand", "dup_result", "attr_kind", "attr_value", "dims",
         "element_type", "drop_key", "regions", "deep_regions", "version", "huge_full", "deep_json", "drop_op"]


def _ops(block: dict) -> list[tuple[dict, dict]]:
    """(op, the block holding it) for every op, nested regions included."""
    found, stack = [], [block]
    while stack:
        current = stack.pop()
        for op in current.get("ops", []) if isinstance(current, dict) else []:
            found.append((op, current))
            for region in op.get("regions", []) if isinstance(op, dict) else []:
                stack.extend(region.get("blocks", []) if isinstance(region, dict) else [])
    return found


def _ids(ops) -> list[int]:
    return [r["%"] for op, _ in ops for r in (op["O"] if isinstance(op.get("O"), list) else [op.get("O")])
            if isinstance(r, dict) and isinstance(r.get("%"), int)]


def mutate_pir(data: bytes, rng: random.Random) -> tuple[bytes, str | None, str]:
    """The mutated file, "load" when every command must refuse it (else None), and the kind of change."""
    doc = json.loads(data)
    body = doc["program"]["regions"][0]["blocks"][0]
    ops = [(op, block) for op, block in _ops(body) if op.get("#") != "p"]
    op, block = rng.choice(ops)
    kind = rng.choice(KINDS)
    must_fail = None
    if kind == "op_name":
        op["#"] = rng.choice(["1.no_such_op", "9.matmul", "1.", "", "2.stack_create", "1.rnn_grad", "1.while",
                              "2.tuple_pop"])
        must_fail = "load" if op["#"] in ("1.no_such_op", "9.matmul", "1.", "") else None
    elif kind in ("dangling", "null_operand", "drop_operand") and op.get("I"):
        position = rng.randrange(len(op["I"]))
        if kind == "dangling":
            op["I"][position] = {"%": rng.choice([10**9, -10**9, max(_ids(ops) or [0]) + 1])}
            must_fail = "load"
        elif kind == "null_operand":
            op["I"][position] = {"%": 0}
        else:
            del op["I"][position]
    elif kind == "dup_result" and isinstance(op.get("O"), list) and op["O"] and len(_ids(ops)) > 1:
        op["O"][0]["%"] = rng.choice([i for i in _ids(ops) if i != op["O"][0].get("%")])
    elif kind in ("attr_kind", "attr_value") and op.get("A"):
        attr = rng.choice(op["A"])["AT"]
        if kind == "attr_kind":
            attr["#"] = rng.choice(["0.a_nope", "7.a_i32", "0.a_bool", "1.a_intarray", "0.a_array"])
            must_fail = "load" if attr["#"] in ("0.a_nope", "7.a_i32") else None
        else:
            attr["D"] = rng.choice([None, "x", -1, 2**62, [], [[[]]], {"#": "0.a_i32"}, 1e308])
    elif kind in ("dims", "element_type") and isinstance(op.get("O"), list) and op["O"]:
        data_ = op["O"][0].get("TT", {}).get("D")
        if isinstance(data_, list) and len(data_) >= 2:
            if kind == "dims":
                data_[1] = rng.choice([[10**12], [-7, 3], "x", [1] * 40, [2**62, 2**62]])
                must_fail = "load" if data_[1] == "x" else None
            else:
                data_[0] = {"#": rng.choice(["0.t_f128", "0.t_i64", "0.t_bool", "1.t_f32"])}
                must_fail = "load" if data_[0]["#"] == "0.t_f128" else None
    elif kind == "drop_key":
        key = rng.choice(["O", "A", "I", "#", "OA", "regions"])
        must_fail = "load" if key == "#" else None
        op.pop(key, None)
    elif kind == "regions":
        op["regions"] = rng.choice([[], [{"#": "region_9", "blocks": []}], [{"blocks": "x"}], "x"])
        must_fail = "load" if op["regions"] in ([{"blocks": "x"}], "x") else None
    elif kind == "deep_regions":
        block["ops"].insert(0, DEEP_REGIONS)
        must_fail = "load"
    elif kind == "version":
        doc["base_code"]["version"] = rng.choice([0, 5, "4", None, True, 2**70])
        must_fail = "load"
    elif kind == "huge_full":
        block["ops"].insert(0, {"#": "1.full", "I": [], "O": [{"%": 10**8, "TT": {"#": "0.t_dtensor", "D": [
            {"#": "0.t_f32"}, [10**6, 10**6], "NCHW", [], 0]}}], "A": [
            {"N": "shape", "AT": {"#": "1.a_intarray", "D": [10**6, 10**6]}}, {"N": "value", "AT": {"#": "0.a_f64",
                                                                                                 "D": 1.0}},
            {"N": "dtype", "AT": {"#": "1.a_dtype", "D": "float32"}}, {"N": "place", "AT": {"#": "1.a_place",
                                                                                         "D": [0, 0, ""]}}]})
    elif kind == "deep_json":
        op["A"] = [{"N": "deep", "AT": DEEP}]
        must_fail = "load"
    elif kind == "drop_op":
        block["ops"].remove(op)
    # nesting deeper than Python's json writes is spliced into the text
    text = json.dumps(doc).replace(f'"{DEEP}"', "[" * 5000 + "]" * 5000)
    return text.replace(f'"{DEEP_REGIONS}"', _nested_ifs(rng.choice([70, 500]))).encode(), must_fail, kind


def _nested_ifs(depth: int) -> str:
    """pd_op.if ops nested ``depth`` regions deep."""
    text = '{"#": "1.if", "I": [], "O": [], "A": [], "regions": []}'
    for _ in range(depth):
        text = '{"#": "1.if", "I": [], "O": [], "A": [], "regions": [{"blocks": [{"ops": [' + text + ']}]}]}'
    return text


def pir_scenarios(data: Path) -> list[tuple[dict[str, bytes], list[str], str | None]]:
    """(files, gradc command, the output it writes) over Paddle's PIR fixtures, for fuzzing.scenarios."""
    pir = data / "pir"
    mlp = {name: (pir / "mlp" / name).read_bytes() for name in ("forward.json", "feed.npz", "params.npz")}
    model = {name: (pir / "inference" / name).read_bytes() for name in ("model.json", "model.pdiparams", "feed.npz")}
    found = [(mlp, ["run", "forward.json", "--feed", "feed.npz", "--params", "params.npz", "--fetch", "loss"], None),
             (mlp, ["compile", "forward.json", "-o", "out.pb"], "out.pb"),   # the loss picked from the fetch ops
             (model, ["run", "model.json", "--params", "model.pdiparams", "--feed", "feed.npz"], None)]
    optim = {f"{kind}.json": gzip.decompress((pir / "optim_adam" / f"{kind}.json.gz").read_bytes())
             for kind in ("train", "startup")}   # Paddle's Adam training program and its startup
    found += [(optim, ["run", "startup.json"], None), (optim, ["verify", "train.json"], None)]
    for case in ("cond", "lstm", "while_loop"):   # control flow and the fused rnn, written back as PIR
        found.append(({"forward.json": (pir / case / "forward.json").read_bytes()},
                      ["compile", "forward.json", "-o", "out.json", "--loss", "loss"], "out.json"))
    return found
