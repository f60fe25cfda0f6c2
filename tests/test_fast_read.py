"""gradc.io.fast_read gives the IR the field-by-field converters give: for Paddle's programs, and for messages
with unknown fields, undecodable names, is_target and attributes written twice (the unusual ones go through
the reference converters); and a whole program read from its bytes is the program protobuf's parse gives, or
nothing where protobuf would refuse the bytes."""

import random

import pytest
from google.protobuf.message import DecodeError

from fixtures import DATA
from fuzzing_mutations import mutate_bytes, mutate_program
from gradc.io.fast_read import Reader, read_program
from gradc.io.protobuf import _op_from_proto, _var_from_proto, program_from_proto
from gradc.ir import AttrType, OpDesc, VarDesc
from gradc.proto import framework_pb2 as pb


def _fields(item) -> dict:
    return {name: getattr(item, name) for name in type(item).__slots__}


def _same_as_reference(reader: Reader, var_msgs=(), op_msgs=()):
    """Read from the bytes alone, and with the parsed message at hand."""
    for msg in var_msgs:
        for var in reader.var(msg.SerializeToString()), reader.var(msg.SerializeToString(), msg):
            assert type(var) is VarDesc and _fields(var) == _fields(_var_from_proto(msg))
    for msg in op_msgs:
        for op in reader.op(msg.SerializeToString()), reader.op(msg.SerializeToString(), msg):
            assert type(op) is OpDesc and _fields(op) == _fields(_op_from_proto(msg))


@pytest.mark.parametrize("path", sorted(DATA.glob("**/forward.pb"))[::7], ids=lambda p: str(p.parent.name))
def test_paddle_programs(path):
    msg = pb.ProgramDesc.FromString(path.read_bytes())
    reader = Reader()
    for block in msg.blocks:
        _same_as_reference(reader, block.vars, block.ops)


def test_converted_values_are_not_shared_between_ops_and_vars():
    reader = Reader()
    attr = pb.OpDesc.Attr(name="axes", type=AttrType.INTS, ints=[1, 2])
    first, second = (reader.op(pb.OpDesc(type="squeeze2", attrs=[attr]).SerializeToString()) for _ in range(2))
    def with_role(role: int) -> OpDesc:   # a run not met before: read attribute by attribute
        role_attr = pb.OpDesc.Attr(name="op_role", type=AttrType.INT, i=role)
        return reader.op(pb.OpDesc(type="squeeze2", attrs=[attr, role_attr]).SerializeToString())

    other_run = with_role(1)
    first.attrs["axes"].append(3)
    other_run.attrs["axes"].append(4)
    assert second.attrs["axes"] == [1, 2]
    assert with_role(2).attrs == {"axes": [1, 2], "op_role": 2}
    tensor = pb.VarType.TensorDesc(data_type=pb.VarType.FP32, dims=[2, 3])
    var_msg = pb.VarDesc(name="v", type=pb.VarType(type=pb.VarType.DENSE_TENSOR,
                                                   dense_tensor=pb.VarType.DenseTensorDesc(tensor=tensor)))
    a, b = reader.var(var_msg.SerializeToString()), reader.var(var_msg.SerializeToString())
    a.shape.append(4)
    assert b.shape == [2, 3]


def test_unusual_messages():
    op = pb.OpDesc(type="scale", inputs=[pb.OpDesc.Var(parameter="X", arguments=["x", "y"])],
                   outputs=[pb.OpDesc.Var(parameter="Out")], is_target=True,
                   attrs=[pb.OpDesc.Attr(name="scale", type=AttrType.FLOAT, f=2.0),
                          pb.OpDesc.Attr(name="scale", type=AttrType.FLOAT, f=3.0),
                          pb.OpDesc.Attr(name="s", type=AttrType.SCALAR, scalar=pb.Scalar(type=pb.Scalar.LONG, i=4))])
    unknown = pb.OpDesc.FromString(op.SerializeToString() + b"\xf8\x07\x01")   # field 127, a varint
    undecodable = pb.OpDesc.FromString(b"\x0a\x06\x0a\x02\xff\xfe\x12\x00" + pb.OpDesc(type="relu").SerializeToString())
    assert type(undecodable.inputs[0].parameter) is bytes
    long_name = pb.OpDesc(type="relu", inputs=[pb.OpDesc.Var(parameter="X", arguments=["v" * 300])])
    var = pb.VarDesc(name="r", type=pb.VarType(type=pb.VarType.READER), persistable=True,
                     attrs=[pb.VarDesc.Attr(name="k", type=AttrType.INT, i=1)])
    raw_name = pb.VarDesc.FromString(b"\x0a\x02\xff\xfe" + pb.VarDesc(type=pb.VarType(type=pb.VarType.RAW)
                                                                      ).SerializePartialToString())
    var_unknown = pb.VarDesc.FromString(var.SerializeToString() + b"\xf8\x07\x01")
    _same_as_reference(Reader(), [var, raw_name, var_unknown, pb.VarDesc(name="n" * 200, type=var.type)],
                       [op, unknown, undecodable, long_name, pb.OpDesc(type="feed")])


def _program_fields(program) -> list:
    """Everything the IR holds, floats by repr (so -0.0 and 0.0 differ) and names with their types."""
    out = [program.version, program.op_version_map]
    for block in program.blocks:
        out.append((block.idx, block.parent_idx, block.forward_block_idx, list(block.vars)))
        out += [repr(_fields(var)) for var in block.vars.values()]
        out += [repr(_fields(op)) for op in block.ops]
    return out


def _agrees_with_protobuf(data: bytes) -> str:
    """read_program's answer against protobuf's parse of the same bytes: "read" (the same program), "left"
    (it gave None, and the caller's protobuf parse decides); an AssertionError where they differ."""
    try:
        msg = pb.ProgramDesc.FromString(data)
        readable = msg.IsInitialized() and len(msg.blocks) > 0
    except DecodeError:
        readable = False
    program = read_program(data)
    if program is None:
        return "left"
    assert readable, "read bytes that protobuf refuses or that miss a required field"
    assert _program_fields(program) == _program_fields(program_from_proto(msg))
    return "read"


@pytest.mark.parametrize("case", ["cond", "while_loop", "mlp", "layers/lstm"])
def test_a_program_read_from_its_bytes_is_protobufs(case):
    data = (DATA / case / "forward.pb").read_bytes()
    assert _agrees_with_protobuf(data) == "read"


@pytest.mark.parametrize("case", ["cond", "mlp"])
def test_mutated_bytes_are_read_as_protobuf_reads_them_or_left_to_it(case):
    """Flipped, cut, inserted and repeated bytes, and changed fields: never a program protobuf would refuse,
    never one that differs from its parse."""
    data = (DATA / case / "forward.pb").read_bytes()
    rng = random.Random(0)
    outcomes = [_agrees_with_protobuf(mutate_bytes(data, rng)) for _ in range(300)]
    outcomes += [_agrees_with_protobuf(mutate_program(data, rng)[0]) for _ in range(100)]
    assert {"read", "left"} <= set(outcomes)


def _field(tag: bytes, value: bytes) -> bytes:
    return tag + bytes([len(value)]) + value


def _layouts() -> list[tuple[str, bytes, str]]:
    """(what, a ProgramDesc's bytes, whether read_program reads it or leaves it to protobuf)."""
    dense = pb.VarType(type=pb.VarType.DENSE_TENSOR, dense_tensor=pb.VarType.DenseTensorDesc(
        tensor=pb.VarType.TensorDesc(data_type=pb.VarType.FP32, dims=[-1, 3]))).SerializeToString()
    body = _field(b"\x12", dense)
    op = pb.OpDesc(type="relu", inputs=[pb.OpDesc.Var(parameter="X", arguments=["a"])],
                   outputs=[pb.OpDesc.Var(parameter="Out", arguments=["b"])]).SerializeToString()
    at = op.index(b"\x1a")

    def program(vars_=(b"a", b"b"), var_body=body, ops=(op,), head=b"\x08\x00\x10" + b"\xff" * 9 + b"\x01",
                tail=b"", name_last=False) -> bytes:
        items = [(var_body + _field(b"\x0a", n)) if name_last else (_field(b"\x0a", n) + var_body) for n in vars_]
        block = head + b"".join(_field(b"\x1a", v) for v in items) + b"".join(_field(b"\x22", o) for o in ops) + tail
        return _field(b"\x0a", block)

    version = pb.ProgramDesc(version=pb.Version(version=3)).SerializeToString()
    return [
        ("plain, parent -1 in ten bytes", program(), "read"),
        ("a var named again after its type (the last name wins)", program(var_body=body + b"\x0a\x01z"), "read"),
        ("a var's name after its type", program(name_last=True), "read"),
        ("an op's type before its slots", program(ops=(op[at:] + op[:at],)), "read"),
        ("an idx in two bytes", program(head=b"\x08\x80\x00\x10\x00"), "read"),
        ("forward_block_idx 1 and -1", program(tail=b"\x28\x01\x28" + b"\xff" * 9 + b"\x01"), "read"),
        ("a version after the blocks", program() + version, "read"),
        ("a version before them", version + program(), "read"),
        ("an empty version", program() + b"\x22\x00", "read"),
        ("a parent_idx in eleven bytes", program(head=b"\x08\x00\x10" + b"\xff" * 10 + b"\x01"), "left"),
        ("a parent_idx of 2**32", program(head=b"\x08\x00\x10\x80\x80\x80\x80\x10"), "left"),
        ("no parent_idx", program(head=b"\x08\x00"), "left"),
        ("a var without its type", program(var_body=b""), "left"),
        ("no blocks", version, "left"),
        ("nothing", b"", "left"),
    ]


@pytest.mark.parametrize("what, data, outcome", _layouts(), ids=[what for what, _, _ in _layouts()])
def test_unusual_layouts(what, data, outcome):
    """Fields in orders protobuf does not write, a name given twice, ints of every length, a version."""
    assert _agrees_with_protobuf(data) == outcome
