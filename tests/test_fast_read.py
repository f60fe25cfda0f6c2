"""gradc.io.fast_read gives the IR the field-by-field converters give: for Paddle's programs, and for messages
with unknown fields, undecodable names, is_target and attributes written twice (the unusual ones go through
the reference converters)."""

import pytest

from fixtures import DATA
from gradc.io.fast_read import Reader
from gradc.io.protobuf import _op_from_proto, _var_from_proto
from gradc.ir import AttrType, OpDesc, VarDesc
from gradc.proto import framework_pb2 as pb


def _fields(item) -> dict:
    return {name: getattr(item, name) for name in type(item).__slots__}


def _same_as_reference(reader: Reader, var_msgs=(), op_msgs=()):
    for msg in var_msgs:
        var = reader.var(msg)
        assert type(var) is VarDesc and _fields(var) == _fields(_var_from_proto(msg))
    for msg in op_msgs:
        op = reader.op(msg)
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
    first, second = (reader.op(pb.OpDesc(type="squeeze2", attrs=[attr])) for _ in range(2))
    first.attrs["axes"].append(3)
    assert second.attrs["axes"] == [1, 2]
    tensor = pb.VarType.TensorDesc(data_type=pb.VarType.FP32, dims=[2, 3])
    var_msg = pb.VarDesc(name="v", type=pb.VarType(type=pb.VarType.DENSE_TENSOR,
                                                   dense_tensor=pb.VarType.DenseTensorDesc(tensor=tensor)))
    a, b = reader.var(var_msg), reader.var(var_msg)
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
