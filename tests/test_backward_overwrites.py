"""The backward of values a program overwrites: a grad op reads the value its forward op saw, from a copy
taken where the program overwrites it later; a value overwritten by an op without gradient is off the path."""

import numpy as np
import pytest

import gradc
from gradc.gradcheck import check_program
from gradc.ir import AttrType
from gradc.layers import ProgramBuilder


def ops_of(program):
    return [op.type for op in program.global_block.ops]


def _in_place(*ops):
    """y = x * w, then each (type, inputs) op writes y in place; loss = mean(y)."""
    net = ProgramBuilder()
    x, w = net.data("x", [2, 3], "float64"), net.parameter("w", [2, 3], "float64")
    net.block.create_var("y", [2, 3], gradc.VarType.FP64)
    net.block.append_op("elementwise_mul", {"X": [x], "Y": [w]}, {"Out": ["y"]})
    for type, inputs in ops:
        net.block.append_op(type, inputs, {"Out": ["y"]})
    return net.program, net.mean("y")


@pytest.mark.parametrize("ops", [
    [("gelu", {"X": ["y"]})],                                           # its grad reads X: the value before
    [("elementwise_mul", {"X": ["y"], "Y": ["y"]})],                    # y = y * y: both grads add up
    [("tanh", {"X": ["y"]}), ("elementwise_mul", {"X": ["y"], "Y": ["w"]})],   # reads Out, then X
], ids=["gelu", "square", "tanh-then-mul"])
def test_an_op_that_overwrites_its_input_gets_the_value_it_read(ops):
    program, loss = _in_place(*ops)
    rng = np.random.default_rng(0)
    check_program(program, {"x": rng.standard_normal((2, 3))}, ["x", "w"], loss, {"w": rng.standard_normal((2, 3))})


def test_the_copy_of_an_overwritten_input_is_taken_before_the_op():
    program, loss = _in_place(("gelu", {"X": ["y"]}))
    gradc.append_backward(program, loss)
    ops = program.global_block.ops
    assert [op.type for op in ops[:3]] == ["elementwise_mul", "assign", "gelu"]
    assert ops[1].output("Out") == ["y@SAVE@0@0"]
    assert next(op for op in ops if op.type == "gelu_grad").input("X") == ["y@SAVE@0@0"]


def test_the_first_op_overwriting_a_fed_input_reads_a_copy_taken_at_the_start():
    net = ProgramBuilder()
    x, w = net.data("x", [2, 3], "float64"), net.parameter("w", [2, 3], "float64")
    net.block.append_op("gelu", {"X": [x]}, {"Out": [x]})
    net.block.append_op("elementwise_mul", {"X": [x], "Y": [w]}, {"Out": [x]})
    loss = net.mean(x)
    rng = np.random.default_rng(1)
    check_program(net.program, {"x": rng.standard_normal((2, 3))}, ["x", "w"], loss, {"w": rng.standard_normal((2, 3))})
    gradc.append_backward(net.program, loss)
    first = net.program.global_block.ops[0]
    assert (first.type, first.output("Out")) == ("assign", ["x@SAVE@0@-1"])


def _overwritten(*, read_after: bool):
    """h = tanh(x * w); h = 1 (a constant overwrites it); loss = mean(h [* w])."""
    net = ProgramBuilder()
    x, w = net.data("x", [2, 3], "float64"), net.parameter("w", [2, 3], "float64")
    h = net.op("tanh", {"X": net.op("elementwise_mul", {"X": x, "Y": w})[0]})[0]
    net.block.append_op("fill_constant", {}, {"Out": [h]}, {"shape": [2, 3], "dtype": gradc.VarType.FP64, "value": 1.0})
    return net.program, net.mean(net.op("elementwise_mul", {"X": h, "Y": w})[0] if read_after else h)


def test_a_value_overwritten_by_an_op_without_gradient_is_off_the_path():
    program, loss = _overwritten(read_after=False)
    assert gradc.append_backward(program, loss) == []
    assert ops_of(program)[-1:] == ["fill_constant"] and "w@GRAD" not in program.global_block.vars
    program, loss = _overwritten(read_after=True)
    assert gradc.append_backward(program, loss) == [("w", "w@GRAD")]
    assert "tanh_grad" not in ops_of(program) and "x@GRAD" not in program.global_block.vars
    rng = np.random.default_rng(2)
    grads = check_program(_overwritten(read_after=True)[0], {"x": rng.standard_normal((2, 3))}, ["w"], loss,
                          {"w": rng.standard_normal((2, 3))})
    np.testing.assert_allclose(grads["w"], np.full((2, 3), 1 / 6))


def test_a_name_written_anew_starts_a_new_value_whose_grad_is_its_own():
    """y = a * w; z = tanh(y); y = b * w (a new value, from no old one); loss = mean(z + y): the grads of the
    two values of y are not added together."""
    net = ProgramBuilder()
    a, b, w = (net.data("a", [2, 3], "float64"), net.data("b", [2, 3], "float64"),
               net.parameter("w", [2, 3], "float64"))
    net.block.create_var("y", [2, 3], gradc.VarType.FP64)
    net.block.append_op("elementwise_mul", {"X": [a], "Y": [w]}, {"Out": ["y"]})
    z = net.op("tanh", {"X": "y"})[0]
    net.block.append_op("elementwise_mul", {"X": [b], "Y": [w]}, {"Out": ["y"]})
    loss = net.mean(net.op("elementwise_add", {"X": z, "Y": "y"})[0])
    rng = np.random.default_rng(0)
    check_program(net.program, {"a": rng.standard_normal((2, 3)), "b": rng.standard_normal((2, 3))}, ["a", "b", "w"],
                  loss, {"w": rng.standard_normal((2, 3))})


def test_a_new_value_off_the_path_drops_the_parts_of_its_grad_awaiting_a_sum():
    """y = a * w; z = tanh(y); y = assign(c), c wanting no grad; loss = mean((z + y) * y): the new y's grad has two
    writers, summed by no one (its writer is off the path), and none of them reaches the old y's grad."""
    net = ProgramBuilder()
    a, w = net.data("a", [2, 3], "float64"), net.parameter("w", [2, 3], "float64")
    c = net.data("c", [2, 3], "float64", stop_gradient=True)
    net.block.create_var("y", [2, 3], gradc.VarType.FP64)
    net.block.append_op("elementwise_mul", {"X": [a], "Y": [w]}, {"Out": ["y"]})
    z = net.op("tanh", {"X": "y"})[0]
    net.block.append_op("assign", {"X": [c]}, {"Out": ["y"]})
    both = net.op("elementwise_add", {"X": z, "Y": "y"})[0]
    loss = net.mean(net.op("elementwise_mul", {"X": both, "Y": "y"})[0])
    rng = np.random.default_rng(0)
    check_program(net.program, {"a": rng.standard_normal((2, 3)), "c": rng.standard_normal((2, 3))}, ["a", "w"],
                  loss, {"w": rng.standard_normal((2, 3))})


@pytest.mark.parametrize("ops, expected", [
    ([("a", {"X": ["x"]}, {"Out": ["y"]}), ("b", {"X": ["y"]}, {"Out": ["z"]})], set()),   # each written once, first
    ([("a", {"X": ["x"]}, {"Out": ["y"]}), ("b", {"X": ["x"]}, {"Out": ["y"]})], {"y"}),   # written twice
    ([("a", {"X": ["x"]}, {"Out": ["x"]})], {"x"}),                                       # read and written by one op
    ([("a", {"X": ["y"]}, {"Out": ["z"]}), ("b", {"X": ["x"]}, {"Out": ["y"]})], {"y"}),   # read, then written
    ([("a", {"X": ["x"]}, {"Out": ["y", "y"]})], {"y"}),                                  # twice in one op's list
    ([("a", {"X": ["x"]}, {"Out": ["y"], "Mask": ["m"]}), ("b", {}, {"Out": ["m", "x"]})], {"m", "x"}),
    ([("a", {}, {"Out": ["z"]}, {"shape": "n"}), ("b", {"X": ["x"]}, {"Out": ["n"]})], {"n"}),   # an attribute's var
    ([("gather", {"X": ["x"], "Index": ["i"]}, {"Out": ["y"]}), ("b", {"X": ["y"]}, {"Out": ["i"]})], {"i"}),
], ids=["once", "twice", "in_place", "read_first", "one_list", "several", "attribute", "no_grad_slot"])
def test_rewritten_names_are_those_written_after_a_use(ops, expected):
    """Versions.rewritten, which decides whether any grad op may read a stale value: a name some op writes after an
    earlier op (or itself) read or wrote it; find_path's sweep of the block says whether there is one (read in a slot
    that gets no gradient or by an attribute too)."""
    from gradc.backward.path import find_path
    from gradc.backward.versions import Versions

    program = gradc.Program()
    for type, inputs, outputs, *attr in ops:
        op = program.global_block.append_op(type, inputs, outputs)
        for name, var in (attr[0] if attr else {}).items():
            op.set_attr(name, var, AttrType.VAR)
    assert Versions(program).rewritten(program.global_block) == expected
    block = program.global_block
    rewrites = find_path(block, block.ops, {block.ops[-1].output_names()[0]}, set()).rewrites
    assert rewrites == bool(expected)
