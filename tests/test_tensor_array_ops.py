"""dy2static's list.pop() and list[a:b] of a list grown in a loop (pd_op.array_pop, pd_op.slice_array, with
slice_array_dense and array_write_ in a while): Paddle's saved models (tools/paddle_pir_array_ops.py) run in gradc
to the outputs Paddle's paddle.jit.load gives, read as they are and written back."""

from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.pir import load_pir, parse_pir, serialize_pir
from programs import Net

ARRAYS = Path(__file__).parent / "data" / "paddle" / "pir_arrays"


@pytest.mark.parametrize("written_back", [False, True])
@pytest.mark.parametrize("case", ["pop_last_slice", "pop_middle_slice"])
def test_a_list_popped_and_sliced_gives_paddles_outputs(case, written_back):
    program = load_pir(ARRAYS / case / "inference.json")
    assert {"array_pop", "slice_array", "write_to_array"} <= {op.type for b in program.blocks for op in b.ops}
    scope = gradc.Scope()
    for name, value in gradc.read_params(ARRAYS / case / "inference.pdiparams", program).items():
        scope[name] = value
    if written_back:
        program = parse_pir(serialize_pir(program))
    with np.load(ARRAYS / case / "feed.npz") as feed, np.load(ARRAYS / case / "expected.npz") as expected:
        got = gradc.Executor().run(program, dict(feed), scope=scope)
        assert len(got) == len(expected.files)
        for i, value in enumerate(got):
            np.testing.assert_allclose(value, expected[f"out{i}"], rtol=1e-5, atol=1e-6)


def _array_of(values, *ops):
    """A program writing ``values`` into an array, then ``ops`` (type, inputs, outputs, attrs) over it."""
    net = Net()
    array = net.block.create_var("array", None, None)
    array.type = gradc.ir.VarType.DENSE_TENSOR_ARRAY
    feed = {}
    for i, value in enumerate(values):
        x, index = net.data(f"x{i}", list(value.shape)), net.data(f"i{i}", [1], gradc.ir.VarType.INT64)
        net.block.append_op("write_to_array", {"X": [x], "I": [index]}, {"Out": ["array"]}, {})
        feed |= {x: value, index: np.array([i])}
    for op_type, ins, outs, attrs in ops:
        for name in (n for names in outs.values() for n in names):
            if net.block.find_var(name) is None:
                net.block.create_var(name, None, None)
        net.block.append_op(op_type, ins, outs, attrs)
    return net, feed


def test_array_pop_removes_the_slot_in_place_and_gives_it():
    values = [np.full([2], float(i)) for i in range(4)]
    ops = [("array_pop", {"array": ["array"]}, {"array_out": ["array"], "out": ["first"]}, {"index": 1}),
           ("array_pop", {"array": ["array"]}, {"array_out": ["array"], "out": ["second"]}, {"index": -1}),
           ("lod_array_length", {"X": ["array"]}, {"Out": ["left"]}, {})]
    net, feed = _array_of(values, *ops)
    first, second, left = gradc.Executor().run(net.program, feed, ["first", "second", "left"], gradc.Scope())
    np.testing.assert_array_equal(first, values[1])
    np.testing.assert_array_equal(second, values[3])
    assert left.tolist() == [2]


@pytest.mark.parametrize(("start", "end", "kept"), [(1, 3, [1, 2]), (-2, 10, [2, 3]), (3, 1, [])])
def test_slice_array_keeps_the_slots_python_slicing_keeps(start, end, kept):
    values = [np.full([1], float(i)) for i in range(4)]
    ops = [("fill_constant", {}, {"Out": ["s"]}, {"shape": [1], "dtype": 3, "value": float(start)}),
           ("fill_constant", {}, {"Out": ["e"]}, {"shape": [1], "dtype": 3, "value": float(end)}),
           ("slice_array", {"input": ["array"], "starts": ["s"], "ends": ["e"]}, {"out": ["part"]}, {}),
           ("lod_array_length", {"X": ["part"]}, {"Out": ["size"]}, {})]
    if kept:
        ops.append(("tensor_array_to_tensor", {"X": ["part"]}, {"Out": ["joined"], "OutIndex": ["sizes"]}, {}))
    net, feed = _array_of(values, *ops)
    got = gradc.Executor().run(net.program, feed, ["size", "joined"] if kept else ["size"], gradc.Scope())
    assert got[0].tolist() == [len(kept)]
    if kept:
        np.testing.assert_array_equal(got[1], np.array(kept, float))


def test_popping_an_empty_array_is_refused_naming_the_op():
    ops = [("array_pop", {"array": ["array"]}, {"array_out": ["array"], "out": ["value"]}, {"index": 0})]
    net, feed = _array_of([np.zeros(1)], *ops, *ops)
    with pytest.raises(gradc.ExecutionError, match=r"op 2 \(array_pop\): pops slot 0 of array \(array\), which has 0"):
        gradc.Executor().run(net.program, feed, ["value"], gradc.Scope())
