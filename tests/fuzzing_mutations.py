"""Byte-, protobuf- and npz-level mutations of committed fixtures for tests/fuzzing.py: each returns the mutated
bytes and, where the result must be rejected, the stage that must reject it."""

from __future__ import annotations

import io
import random

import numpy as np

from gradc.proto import framework_pb2 as pb


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    kind = rng.choice(["flip", "truncate", "insert", "zero", "duplicate"])
    if not data or kind == "truncate":
        return bytes(data[: rng.randrange(len(data) + 1)])
    at = rng.randrange(len(data))
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == "insert":
        data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    elif kind == "zero":
        data[at:at + rng.randint(1, 64)] = bytes(min(64, len(data) - at))
    else:
        data[at:at] = data[at:at + rng.randint(1, 256)]
    return bytes(data)


HUGE = [10**12, -7, 0, 2**31, 2**62]


def mutate_program(data: bytes, rng: random.Random) -> tuple[bytes, str | None, str]:
    """A structural change to a ProgramDesc, when the result must be rejected ("load": by every command,
    "use": by commands that compile or run it, None: it may be valid), and the kind of change."""
    msg = pb.ProgramDesc.FromString(data)
    block = rng.choice(msg.blocks)
    kind = rng.choice(["dims", "attr", "drop_arg", "rename_arg", "drop_op", "dup_op", "parent", "sub_block",
                       "name", "deep", "dtype", "fill_huge", "slot"])
    must_fail = None
    ops, tensor_vars = list(block.ops), [v for v in block.vars if v.type.HasField("dense_tensor")]
    if kind == "dims" and tensor_vars:
        var = rng.choice(tensor_vars)
        del var.type.dense_tensor.tensor.dims[:]
        var.type.dense_tensor.tensor.dims.extend(rng.choice([[HUGE[0]], [-5, 3], [], [1] * 9]))
    elif kind == "dtype" and tensor_vars:
        rng.choice(tensor_vars).type.dense_tensor.tensor.data_type = rng.choice([0, 1, 2, 3, 6, 20, 25, 38])
    elif kind == "attr" and ops:
        op = rng.choice(ops)
        if op.attrs:
            attr = rng.choice(op.attrs)
            if attr.type == pb.INT:
                attr.i = rng.choice([2**31 - 1, -(2**31), -1, 0])
            elif attr.type in (pb.INTS, pb.LONGS):
                values = attr.ints if attr.type == pb.INTS else attr.longs
                if values:
                    big = 2**31 - 1 if attr.type == pb.INTS else 2**40
                    values[rng.randrange(len(values))] = rng.choice([0, -3, big])
            elif attr.type == pb.FLOAT:
                attr.f = rng.choice([float("nan"), float("inf"), -1e30, 0.0])
            elif attr.type == pb.STRING:
                attr.s = rng.choice(["", "NOPE", "x" * 300])
            else:
                attr.type = rng.choice([pb.INT, pb.STRING, pb.FLOATS])   # a value of the wrong kind
    elif kind in ("drop_arg", "rename_arg", "slot") and ops:
        op = rng.choice(ops)
        slots = [s for s in list(op.inputs) + list(op.outputs) if s.arguments]
        if slots:
            slot = rng.choice(slots)
            if kind == "drop_arg":
                del slot.arguments[rng.randrange(len(slot.arguments))]
            elif kind == "rename_arg":
                slot.arguments[rng.randrange(len(slot.arguments))] = "no_such_var"
                must_fail = "use"
            else:
                slot.parameter = rng.choice(["Nope", "X", "Out@GRAD"])
    elif kind == "drop_op" and ops:
        del block.ops[rng.randrange(len(ops))]
    elif kind == "dup_op" and ops:
        block.ops.add().CopyFrom(rng.choice(ops))
    elif kind == "parent" and len(msg.blocks) > 1:
        rng.choice(msg.blocks[1:]).parent_idx = rng.choice([-1, 99, len(msg.blocks) - 1])
    elif kind == "sub_block":
        for op in ops:
            for attr in op.attrs:
                if attr.type == pb.BLOCK:
                    attr.block_idx = rng.choice([0, -1, 50, block.idx])
    elif kind == "name" and ops:
        rng.choice(ops).type = rng.choice(["relu\nrelu", "r\x00lu", "nosuchop"])
    elif kind == "deep":
        parent = len(msg.blocks) - 1
        for _ in range(rng.choice([100, 1000])):
            sub = msg.blocks.add(idx=len(msg.blocks), parent_idx=parent)
            parent = sub.idx
        must_fail = "load"
    elif kind == "fill_huge":
        op = block.ops.add(type="fill_constant")
        op.outputs.add(parameter="Out", arguments=[tensor_vars[0].name if tensor_vars else "x"])
        op.attrs.add(name="shape", type=pb.LONGS, longs=[10**6, 10**6])
        op.attrs.add(name="dtype", type=pb.INT, i=5)
        op.attrs.add(name="value", type=pb.FLOAT, f=1.0)
    return msg.SerializeToString(), must_fail, kind


def mutate_npz(data: bytes, rng: random.Random, declared: dict[str, list[int]]) -> tuple[bytes, str | None]:
    """An archive with one array changed (shape, dtype, header) or replaced; "use" when reading it must fail."""

    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    if not arrays:
        return data, None
    name = rng.choice(sorted(arrays))
    kind = rng.choice(["shape", "dtype", "huge_header", "npy", "strings"])
    must_fail = None
    if kind == "shape":
        arrays[name] = np.zeros(tuple(d + 1 for d in arrays[name].shape) or (2,), arrays[name].dtype)
        must_fail = "use" if name in declared and all(d >= 0 for d in declared[name]) else None
    elif kind == "dtype":
        arrays[name] = arrays[name].astype(rng.choice(["float64", "int32", "bool", "complex64"]))
    elif kind == "strings":
        arrays[name] = np.array(["a", "b"])
        must_fail = "use"
    elif kind == "npy":
        buffer = io.BytesIO()
        np.save(buffer, arrays[name])
        return buffer.getvalue(), "use"
    else:
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        raw = buffer.getvalue()
        return raw.replace(repr(tuple(arrays[name].shape)).encode(), b"(1000000000000,)", 1), None
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue(), must_fail


def declared_shapes(program_bytes: bytes) -> dict[str, list[int]]:
    try:
        msg = pb.ProgramDesc.FromString(program_bytes)
    except Exception:  # noqa: BLE001 - not a ProgramDesc (PIR JSON): no declared shapes to check against
        return {}
    return {v.name: list(v.type.dense_tensor.tensor.dims) for b in msg.blocks for v in b.vars
            if v.type.HasField("dense_tensor")}
