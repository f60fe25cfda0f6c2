"""gradc.io.fast_read gives the IR the field-by-field converters give: for Paddle's programs, and for messages
with unknown fields, undecodable names, is_target and attributes written twice (the unusual ones go through
the reference converters); and a whole program read from its bytes is the program protobuf's parse gives, or
nothing where protobuf would refuse the bytes."""

import json
import random
import subprocess
import sys

import pytest
from google.protobuf.message import DecodeError

import gradc
import gradc.io
from fixtures import DATA
from fuzzing_mutations import mutate_bytes, mutate_program
from gradc.io.fast_read import Reader, read_program
from gradc.io.plain_decode import PlainDecoder, _dense_var, tensor_desc
from gradc.io.protobuf import _op_from_proto, _var_from_proto, attr_value, program_from_proto
from gradc.io.wire import Encoder
from gradc.io.wire_values import tensor_desc_bytes, varint
from gradc.ir import AttrType, OpDesc, VarDesc
from gradc.ir.types import NUMPY_DTYPE_NAMES
from gradc.proto import framework_pb2 as pb


def _fields(item) -> dict:
    return {name: getattr(item, name) for name in type(item).__slots__}


def _same(a: dict, b: dict) -> bool:
    return a == b or repr(a) == repr(b)   # a NaN attribute (nanquantile's fill value) is equal only as text


def _same_as_reference(reader: Reader, var_msgs=(), op_msgs=()):
    """Read from the bytes alone, and with the parsed message at hand."""
    for msg in var_msgs:
        for var in reader.var(msg.SerializeToString()), reader.var(msg.SerializeToString(), msg):
            assert type(var) is VarDesc and _same(_fields(var), _fields(_var_from_proto(msg)))
    for msg in op_msgs:
        for op in reader.op(msg.SerializeToString()), reader.op(msg.SerializeToString(), msg):
            assert type(op) is OpDesc and _same(_fields(op), _fields(_op_from_proto(msg)))


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


def _attr_cases() -> list[tuple[str, bytes, bool]]:
    """(what, an OpDesc.Attr's bytes, whether plain_decode reads it without protobuf)."""
    def attr(**fields) -> bytes:
        return pb.OpDesc.Attr(name="a", **fields).SerializeToString()

    return [
        ("a negative INT, ten bytes", attr(type=AttrType.INT, i=-3), True),
        ("a FLOAT", attr(type=AttrType.FLOAT, f=0.1), True),
        ("a negative LONG", attr(type=AttrType.LONG, l=-(2**40)), True),
        ("a FLOAT64", attr(type=AttrType.FLOAT64, float64=-0.0), True),
        ("a STRING", attr(type=AttrType.STRING, s="ünï"), True),
        ("BOOLEANS", attr(type=AttrType.BOOLEANS, bools=[True, False]), True),
        ("LONGS and FLOAT64S", attr(type=AttrType.LONGS, longs=[-1, 2**62]), True),
        ("empty INTS", attr(type=AttrType.INTS), True),
        ("an INT without its value", attr(type=AttrType.INT), True),
        ("VARS", attr(type=AttrType.VARS, vars_name=["x", "y"]), True),
        ("STRINGS, op_role_var's layout", attr(type=AttrType.STRINGS, strings=["fc_0.w_0", "fc_0.w_0@GRAD", ""]), True),
        ("STRINGS, one of 200 characters", attr(type=AttrType.STRINGS, strings=["w" * 200, "é"]), True),
        ("empty STRINGS", attr(type=AttrType.STRINGS), True),
        ("STRINGS with a value not UTF-8", b"\x0a\x01a\x10\x05\x42\x01\xff", False),
        ("STRINGS cut inside a value", b"\x0a\x01a\x10\x05\x42\x05ab", False),
        ("a BLOCK", attr(type=AttrType.BLOCK, block_idx=1), True),
        ("packed INTS", b"\x0a\x01a\x10\x03\x32\x02\x01\x02", False),
        ("a BOOLEAN of 2", b"\x0a\x01a\x10\x06\x50\x02", False),
        ("an INT and a FLOAT", b"\x0a\x01a\x10\x00\x18\x01\x25\x00\x00\x00\x00", False),
        ("the type before the name", b"\x10\x00\x0a\x01a\x18\x01", False),
        ("an INT of 2**40", b"\x0a\x01a\x10\x00\x18\x80\x80\x80\x80\x80\x20", False),
        ("a SCALAR", attr(type=AttrType.SCALAR, scalar=pb.Scalar(type=pb.Scalar.LONG, i=4)), False),
        ("a name that is not UTF-8", b"\x0a\x02\xff\xfe\x10\x00", False),
    ]


@pytest.mark.parametrize("what, chunk, plain", _attr_cases(), ids=[what for what, _, _ in _attr_cases()])
def test_an_attribute_is_decoded_without_protobuf_only_where_plain(what, chunk, plain):
    """What plain_decode reads is what protobuf's parse, converted, gives; the rest it leaves to protobuf."""
    decoded = PlainDecoder().attr(chunk, b"\x22" + varint(len(chunk)) + chunk)
    assert (decoded is not None) == plain
    if plain:
        reference = pb.OpDesc.Attr.FromString(chunk)
        assert repr(decoded) == repr((reference.name, reference.type, attr_value(reference)))


def _var_cases() -> list[tuple[str, bytes, bool]]:
    tensor = pb.VarType.TensorDesc(data_type=pb.VarType.INT64, dims=[-1, 0, 7])

    def var(kind, **fields) -> bytes:
        return pb.VarDesc(name="v", type=pb.VarType(type=kind, **fields)).SerializeToString()

    dense = pb.VarType.DenseTensorDesc(tensor=tensor, legacy_lod_level=2)
    return [
        ("a dense tensor with a lod level", var(pb.VarType.DENSE_TENSOR, dense_tensor=dense), True),
        ("selected rows", var(pb.VarType.SELECTED_ROWS, selected_rows=tensor), True),
        ("a tensor array", var(pb.VarType.DENSE_TENSOR_ARRAY, tensor_array=pb.VarType.DenseTensorArrayDesc(
            tensor=tensor, legacy_lod_level=1)), True),
        ("no tensor", var(pb.VarType.FEED_MINIBATCH), True),
        ("flags", pb.VarDesc(name="v", type=pb.VarType(type=pb.VarType.DENSE_TENSOR, dense_tensor=dense),
                             persistable=True, stop_gradient=False).SerializeToString(), True),
        ("a reader (kept as raw bytes)", var(pb.VarType.READER), True),
        ("another type's tensor", var(pb.VarType.SELECTED_ROWS, dense_tensor=dense), False),
        ("an attribute", pb.VarDesc(name="v", type=pb.VarType(type=pb.VarType.RAW),
                                    attrs=[pb.VarDesc.Attr(name="k", type=AttrType.INT, i=1)]).SerializeToString(),
         False),
        ("packed dims", b"\x0a\x01v\x12\x0c\x08\x07\x1a\x08\x0a\x06\x08\x05\x12\x02\x01\x02", False),
        ("a data type outside the schema", b"\x0a\x01v\x12\x09\x08\x07\x1a\x05\x0a\x03\x08\x63\x10", False),
    ]


@pytest.mark.parametrize("what, data, plain", _var_cases(), ids=[what for what, _, _ in _var_cases()])
def test_a_var_is_decoded_without_protobuf_only_where_plain(what, data, plain):
    decoded = PlainDecoder().var("v", data[3:], data)
    assert (decoded is not None) == plain
    if plain:
        assert _fields(decoded) == _fields(_var_from_proto(pb.VarDesc.FromString(data)))


def _dense_cases() -> list[tuple[str, bytes, bool]]:
    """(what, a dense var's bytes, whether the dense layout's own reader takes it)."""
    def var(dims=(), lod=None, **flags) -> bytes:
        dense = pb.VarType.DenseTensorDesc(tensor=pb.VarType.TensorDesc(data_type=pb.VarType.FP32, dims=dims))
        if lod is not None:
            dense.legacy_lod_level = lod
        return pb.VarDesc(name="v", type=pb.VarType(type=pb.VarType.DENSE_TENSOR, dense_tensor=dense),
                          **flags).SerializeToString()

    return [
        ("a scalar", var(), True),
        ("a batch dim and dims of one and two bytes", var([-1, 3, 200, 70000]), True),
        ("a dim of 2**40", var([2**40]), True),
        ("a lod level", var([2], lod=1), True),
        ("every flag", var([2], persistable=True, need_check_feed=False, is_parameter=True, stop_gradient=True), True),
        ("some flags", var([2], need_check_feed=True, stop_gradient=False), True),
        ("twenty batch dims (lengths of two bytes)", var([-1] * 20), False),
        ("a flag of 2", var([2]) + b"\x18\x02", True),
        ("flags out of order", var([2]) + b"\x30\x01\x18\x01", False),
        ("a dim of 2 in two bytes", b"\x0a\x01v\x12\x0b\x08\x07\x1a\x07\x0a\x05\x08\x05\x10\x82\x00", True),
        ("packed dims", b"\x0a\x01v\x12\x0c\x08\x07\x1a\x08\x0a\x06\x08\x05\x12\x02\x01\x02", False),
        ("a tensor array", pb.VarDesc(name="v", type=pb.VarType(
            type=pb.VarType.DENSE_TENSOR_ARRAY, tensor_array=pb.VarType.DenseTensorArrayDesc(
                tensor=pb.VarType.TensorDesc(data_type=pb.VarType.FP32)))).SerializeToString(), False),
    ]


@pytest.mark.parametrize("what, data, read", _dense_cases(), ids=[what for what, _, _ in _dense_cases()])
def test_the_dense_layout_is_read_straight_where_it_is_protobufs(what, data, read):
    """The common var's own reader takes its layout and leaves others; whatever it reads that the encoder writes
    back byte for byte (the check the decoder keeps a result by) is what protobuf's parse gives."""
    straight = _dense_var("v", data[3:])
    assert (straight is not None) == read
    reference = _var_from_proto(pb.VarDesc.FromString(data))
    if straight is not None and Encoder().plain_var(straight) == data:
        assert repr(_fields(straight)) == repr(_fields(reference))   # repr: an enum is not its int here
    decoded = PlainDecoder().var("v", data[3:], data)
    assert decoded is None or repr(_fields(decoded)) == repr(_fields(reference))


def _tensor_desc_cases() -> list[tuple[str, bytes, bool]]:
    """(what, a .pdiparams tensor's TensorDesc bytes, whether plain_decode reads it without protobuf)."""
    def desc(data_type, dims) -> bytes:
        return pb.VarType.TensorDesc(data_type=data_type, dims=dims).SerializeToString()

    return [
        ("a float32 matrix", desc(pb.VarType.FP32, [3, 200]), True),
        ("an int64 scalar", desc(pb.VarType.INT64, []), True),
        ("a dim of 2**40 and a negative one", desc(pb.VarType.FP16, [2**40, -1]), True),
        ("packed dims", b"\x08\x05\x12\x02\x01\x02", False),
        ("a data type outside the schema", b"\x08\x63\x10\x01", False),
        ("no data type", b"\x10\x01", False),
        ("an unknown field", b"\x08\x05\x18\x01", False),
        ("a dim of 2 in two bytes", b"\x08\x05\x10\x82\x00", False),
    ]


@pytest.mark.parametrize("what, raw, plain", _tensor_desc_cases(), ids=[what for what, _, _ in _tensor_desc_cases()])
def test_a_tensor_desc_is_decoded_without_protobuf_only_where_plain(what, raw, plain):
    decoded = tensor_desc(raw)
    assert (decoded is not None) == plain
    if plain:
        reference = pb.VarType.TensorDesc.FromString(raw)
        assert decoded == (reference.data_type, tuple(reference.dims))


@pytest.mark.parametrize("data_type", sorted(NUMPY_DTYPE_NAMES))
def test_a_tensor_desc_is_written_as_protobuf_writes_it(data_type):
    for dims in [(), (0,), (3, 200), (2**40, 1, 7)]:
        reference = pb.VarType.TensorDesc(data_type=data_type, dims=dims).SerializeToString(deterministic=True)
        assert tensor_desc_bytes(data_type, dims) == reference


def test_a_paddle_program_is_read_and_compiled_without_importing_protobuf(tmp_path):
    """Loading a binary program reads its plain parts itself (protobuf's runtime is a fifth of start-up); the
    compiled program is the one the protobuf path gives."""
    script = ("import sys\nfrom gradc.cli import main\nsys.argv = ['gradc', 'compile', *sys.argv[1:]]\n"
              "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code\n"
              "print(sorted(m for m in sys.modules if m.startswith('google')))\n")
    source = DATA / "layers" / "resnet50" / "forward.pb"
    out = subprocess.run([sys.executable, "-c", script, str(source), "-o", str(tmp_path / "train.pb")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
    reference = program_from_proto(pb.ProgramDesc.FromString(source.read_bytes()))
    gradc.append_backward(reference, json.loads((source.parent / "meta.json").read_text())["loss"])
    assert (tmp_path / "train.pb").read_bytes() == gradc.io.serialize(reference)


def _mentions(program) -> list[str]:
    """Every name, slot and op type a program holds, one entry a mention (text attributes included: op_role_var
    names a parameter and its grad)."""
    found = []
    for block in program.blocks:
        for key, var in block.vars.items():
            found += (key, var.name)
        for op in block.ops:
            found.append(op.type)
            for slots in op.inputs, op.outputs:
                for slot, args in slots.items():
                    found += (slot, *args)
            for name, value in op.attrs.items():
                if op.attr_types[name] in (AttrType.STRING, AttrType.STRINGS, AttrType.VAR, AttrType.VARS):
                    found += value if type(value) is list else [value]
    return found


def test_a_name_is_one_string_wherever_the_program_names_it():
    program = gradc.io.parse_program((DATA / "mlp" / "backward.pb").read_bytes())
    mentions = _mentions(program)
    first = {}
    for text in mentions:
        assert first.setdefault(text, text) is text, text
    assert len(mentions) > 3 * len(first)   # every var is named by the block and by ops: most mentions repeat
    assert "fc_0.w_0@GRAD" in [v for op in program.global_block.ops for v in op.attrs.get("op_role_var", ())]


def test_a_slot_naming_one_var_holds_a_list_of_one():
    program = gradc.io.parse_program((DATA / "mlp" / "backward.pb").read_bytes())
    single = [args for op in program.global_block.ops for slots in (op.inputs, op.outputs)
              for args in slots.values() if len(args) == 1]
    assert single and all(sys.getsizeof(args) == sys.getsizeof([None]) for args in single)
