"""gradc.io.wire writes the bytes protobuf's deterministic serialisation of the message would give, for Paddle's
programs, compiled ones, and the values a program built in Python may hold (negative numbers, -0.0, values of
unexpected types, attributes Paddle writes twice, vars of unmodelled types)."""

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.io import parse_program
from gradc.io.protobuf import program_to_proto
from gradc.io.wire import encode_program, varint
from gradc.ir import AttrType, VarType
from gradc.proto import framework_pb2 as pb


def _by_message(program) -> bytes:
    return program_to_proto(program).SerializeToString(deterministic=True)


def assert_encoded_as_the_message_path_does(program) -> None:
    """The encoder writes the message path's bytes, or rejects the program with the same error type."""
    try:
        expected = _by_message(program)
    except (TypeError, ValueError) as error:
        with pytest.raises(type(error)):
            encode_program(program)
        return
    assert encode_program(program) == expected


def test_varints_as_protobuf_writes_them():
    for n in (0, 1, 127, 128, 300, 2**31 - 1, 2**63 - 1, -1, -(2**31), -(2**63)):
        msg = pb.OpDesc.Attr(name="a", type=AttrType.LONG, l=n)
        assert msg.SerializeToString().endswith(b"\x68" + varint(n))


@pytest.mark.parametrize("path", sorted(DATA.glob("*/*.pb"))[::3], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_paddle_programs_and_their_compiled_forms(path):
    program = parse_program(path.read_bytes())
    assert encode_program(program) == _by_message(program)
    if path.name == "forward.pb":
        try:
            gradc.append_backward(program)
        except gradc.GradcError:   # no single loss to pick: the round trip above is the check
            return
        assert encode_program(program) == _by_message(program)


def _program_with(attrs: dict, types: dict | None = None):
    program = gradc.Program()
    block = program.global_block
    block.create_var("x", [-1, 3, 0], lod_level=0, persistable=False, stop_gradient=True)
    op = block.append_op("scale", {"X": ["x"]}, {"Out": ["x"]})
    for name, value in attrs.items():
        op.set_attr(name, value, (types or {}).get(name))
    return program


@pytest.mark.parametrize("attrs, types", [
    ({"i": -5, "l": -(2**40), "b": False, "s": "é\u4e2d", "f": -0.0, "g": 0.0}, {"l": AttrType.LONG}),
    ({"f": float("nan"), "inf": float("inf"), "big": 1e39}, None),
    ({"ints": [-1, 0, 2**31 - 1], "floats": [-0.0, 1.5], "strs": ["a", ""], "bools": [True, False], "empty": []},
     {"empty": AttrType.STRINGS}),
    ({"longs": [2**40, -3], "f64": [1e300, -0.0], "block": 0, "blocks": [0], "d": 2.5, "v": "x", "vs": ["x"]},
     {"longs": AttrType.LONGS, "f64": AttrType.FLOAT64S, "block": AttrType.BLOCK, "blocks": AttrType.BLOCKS,
      "d": AttrType.FLOAT64, "v": AttrType.VAR, "vs": AttrType.VARS}),
    ({"flag": 1, "n": True, "np": np.int64(3), "none": None}, {"flag": AttrType.BOOLEAN, "n": AttrType.INT,
                                                                "np": AttrType.INT, "none": AttrType.INT}),
])
def test_attribute_values(attrs, types):
    program = _program_with(attrs, types)
    assert_encoded_as_the_message_path_does(program)


def test_repeated_attributes_scalars_raw_types_and_program_fields():
    program = _program_with({"a": 1, "b": 2})
    op = program.global_block.ops[0]
    duplicate = pb.OpDesc.Attr(name="a", type=AttrType.INT, i=7).SerializeToString()
    op.repeated_attrs = [(1, duplicate), (9, duplicate)]
    op.is_target = True
    scalar = pb.Scalar(type=pb.Scalar.FLOAT64, r=2.5).SerializeToString()
    op.set_attr("value", scalar, AttrType.SCALAR)
    block = program.global_block
    reader = block.add_var(gradc.VarDesc("reader", None, None, VarType.READER))
    reader.raw_type = pb.VarType(type=pb.VarType.READER).SerializeToString()
    reader.attrs = [pb.VarDesc.Attr(name="k", type=AttrType.INT, i=1).SerializeToString()]
    block.add_var(gradc.VarDesc("rows", [4, 2], VarType.FP32, VarType.SELECTED_ROWS))
    block.add_var(gradc.VarDesc("arr", [2], VarType.INT64, VarType.DENSE_TENSOR_ARRAY, lod_level=1))
    block.add_var(gradc.VarDesc("scopes", None, None, VarType.STEP_SCOPES))
    sub = program.append_block(0)
    sub.forward_block_idx = 0
    program.version = 3000000
    program.op_version_map = [("scale", 1), ("mul", -2)]
    assert encode_program(program) == _by_message(program)


@pytest.mark.parametrize("second", [
    {"persistable": 1}, {"stop_gradient": 0}, {"lod_level": True}, {"shape": [3.0]}, {"shape": [True]},
    {"dtype": float(VarType.FP32)},
])
@pytest.mark.parametrize("odd_first", [False, True])
def test_a_cached_var_body_is_reused_only_for_values_of_the_same_types(second, odd_first):
    """A save encodes each distinct var body once: a var whose values equal another's but are of other Python types
    (1 for True, 3.0 for 3), met after it or before it, is encoded as the message path encodes it, or rejected as
    it is."""
    program = gradc.Program()
    block = program.global_block

    def plain():
        block.create_var("first", [3], lod_level=1, persistable=True, stop_gradient=False)

    def odd():
        flags = {"shape": [3], "lod_level": 1, "persistable": True, "stop_gradient": False, **second}
        var = block.create_var("second", flags.pop("shape"), flags.pop("dtype", VarType.FP32), lod_level=1)
        for field, value in flags.items():
            setattr(var, field, value)

    for make in (odd, plain) if odd_first else (plain, odd):
        make()
    assert_encoded_as_the_message_path_does(program)


@pytest.mark.parametrize("values", [[[1, 2], [True, 2]], [["a"], ["a"]], [[0], [False]]])
def test_a_cached_list_attribute_is_reused_only_for_elements_of_the_same_types(values):
    program = _program_with({"v": values[0]}, {"v": AttrType.INTS})
    program.global_block.append_op("scale", {"X": ["x"]}, {"Out": ["x"]}, {"v": values[1]}, {"v": AttrType.INTS})
    assert_encoded_as_the_message_path_does(program)


def test_an_attribute_named_alike_with_another_type_keeps_its_own_type_field():
    """An attribute's name and type fields are encoded once per (name, type) in a save, not once per name."""
    program = _program_with({"v": 3, "w": ["a"]}, {"v": AttrType.INT, "w": AttrType.STRINGS})
    program.global_block.append_op("scale", {"X": ["x"]}, {"Out": ["x"]}, {"v": 3, "w": ["a"]},
                                   {"v": AttrType.LONG, "w": AttrType.VARS})
    assert_encoded_as_the_message_path_does(program)


@pytest.mark.parametrize("size", [1, 60, 62, 123, 124, 125, 126, 127, 200])
def test_slots_and_vars_about_one_length_byte(size):
    """A one-argument slot is written from its start cached by its argument's size, a var in one piece where its
    length takes one byte: names around those sizes, long slot names, empty and multi-argument slots, a name
    not a str in a list attribute, are written as the message path writes them (or rejected as it is)."""
    program = gradc.Program()
    block = program.global_block
    names = [("n" * size)[:-1] + suffix for suffix in "abc"]
    for name in names:
        block.create_var(name, [-1, 3], persistable=True)
    block.append_op("scale", {"X": [names[0]]}, {"Out": [names[1]]})
    block.append_op("concat", {"X": names, "AxisTensor": [], "S" * size: [names[2]]}, {"Out": [names[0]]},
                    {"op_role_var": names[:2]})
    block.append_op("scale", {"X": ["undeclared"], "Y": [names[1]]}, {"Out": [names[2]]})
    assert encode_program(program) == _by_message(program)
    block.ops[-1].set_attr("op_role_var", [names[0], 1], AttrType.STRINGS)
    with pytest.raises(TypeError):
        encode_program(program)


class _Name(str):
    """A str subclass: a name a user's Python code may hold."""


@pytest.mark.parametrize("odd", [b"bytes", 7, _Name("sub"), "lone\ud800", "\u00e9t\u00e9"])
def test_an_argument_the_encoder_does_not_expect_is_written_as_the_message_path_does(odd):
    """Names are encoded where they are used (no table of them): an argument of another type, a str subclass, a
    str UTF-8 cannot encode, in a one-argument slot, in a slot of several and in a text list attribute, gives the
    message path's bytes (or its error)."""
    for slots, attrs in (({"X": [odd]}, {}), ({"X": ["x", odd]}, {}), ({"X": ["x"]}, {"op_role_var": ["x", odd]})):
        program = gradc.Program()
        program.global_block.create_var("x", [2])
        program.global_block.append_op("scale", slots, {"Out": ["x"]}, attrs,
                                       {"op_role_var": AttrType.STRINGS} if attrs else None)
        assert_encoded_as_the_message_path_does(program)


def test_an_edit_after_a_save_is_in_the_next_one():
    """The writer's caches (var bodies, names as op arguments, attribute fields) live for one save."""
    program = parse_program((DATA / "mlp" / "forward.pb").read_bytes())
    first = encode_program(program)
    block = program.global_block
    var = block.vars[block.ops[0].inputs["X"][0]]
    var.shape = [5, *var.shape[1:]]
    var.persistable = not var.persistable
    block.ops[0].inputs["X"] = ["r\u00e9named"]
    block.ops[1].set_attr("op_role", 2)
    second = encode_program(program)
    assert second != first and second == _by_message(program)


def test_the_irs_enums_are_the_schemas():
    """The encoder and the plain decoder take a var type, data type or attribute type as valid by gradc.ir's enums,
    without importing protobuf: those must hold exactly the schema's values."""
    assert set(map(int, VarType)) == set(pb.VarType.Type.values())
    assert set(map(int, AttrType)) == set(pb.AttrType.values())
