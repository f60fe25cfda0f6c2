"""Tensor arrays in gradc's executor and backward: what each op does to an array (growing, unwritten
slots, joins on every axis, OutIndex), the gradients Paddle's makers describe (a read's grad adds when a
slot is read twice, unwritten grad slots are zeros, an array's assign passes its grad), and clear errors
naming block, op index, op type and var for bad indices and reads of slots never written."""

import numpy as np
import pytest

import gradc
from gradc.errors import ExecutionError, ProgramError
from gradc.executor.tensor_array import TensorArray
from gradc.ir import AttrType, VarType
from gradc.passes import VerifyPass
from gradcheck_cases.tensor_array import array, read, to_tensor, write
from programs import Net

X0, X1, X3 = (np.full((2, 3), v) for v in (1.0, 2.0, 4.0))


def arrays_net():
    """A = [x0, x1, (unwritten), x3]."""
    net = Net()
    xs = [net.data(f"x{k}", [2, 3]) for k in (0, 1, 3)]
    a = array(net, xs[0])
    for k, x in zip((0, 1, 3), xs):
        write(net, x, net.constant(k), a)
    return net, a


def run(net, fetch, feed=None):
    values = gradc.Executor().run(net.program, {"x0": X0, "x1": X1, "x3": X3, **(feed or {})}, fetch, gradc.Scope())
    return values if len(fetch) > 1 else values[0]


def test_writes_grow_the_array_and_leave_unwritten_slots():
    net, a = arrays_net()
    length = net.op("lod_array_length", {"X": a})
    value, n = run(net, [a, length])
    assert isinstance(value, TensorArray) and value[2] is None
    assert n.dtype == np.int64 and n.tolist() == [4]
    np.testing.assert_array_equal(value[3], X3)


def test_a_read_of_a_slot_never_written_names_the_op_and_the_array():
    net, a = arrays_net()
    out = read(net, a, net.constant(2))
    with pytest.raises(ExecutionError, match=r"block 0, op 7 \(read_from_array\): reads slot 2 of array X "
                                             rf"\({a}\), which was never written .*written: \[0, 1, 3\]"):
        run(net, [out])
    net, a = arrays_net()
    out = read(net, a, net.constant(7))
    with pytest.raises(ExecutionError, match="reads slot 7 .* 4 slot"):
        run(net, [out])


def test_a_negative_or_fractional_index_is_refused():
    net, a = arrays_net()
    out = read(net, a, net.constant(-1))
    with pytest.raises(ExecutionError, match=r"block 0, op 7 \(read_from_array\): the index I \(\w+\) is -1"):
        run(net, [out])
    net, a = arrays_net()
    out = read(net, a, net.constant(1.0, dtype=VarType.FP32))
    with pytest.raises(ExecutionError, match="must hold one integer"):
        run(net, [out])


@pytest.mark.parametrize("use_stack, axis, shape", [(True, 0, [3, 2, 3]), (True, 2, [2, 3, 3]), (True, -1, [2, 3, 3]),
                                                    (False, 0, [6, 3]), (False, -1, [2, 9])])
def test_joins_on_every_axis(use_stack, axis, shape):
    net = Net()
    xs = [net.data(f"x{k}", [2, 3]) for k in (0, 1, 3)]
    a = array(net, xs[0])
    for k, x in enumerate(xs):
        write(net, x, net.constant(k), a)
    joined = to_tensor(net, a, axis=axis, use_stack=use_stack)
    index = net.block.ops[-1].output("OutIndex")[0]
    out, sizes = run(net, [joined, index])
    join = np.stack if use_stack else np.concatenate
    np.testing.assert_array_equal(out, join([X0, X1, X3], axis))
    assert list(out.shape) == shape
    each = 1 if use_stack else X0.shape[axis]
    assert sizes.dtype == np.int32 and sizes.tolist() == [each] * 3


def test_concat_of_slots_of_different_sizes_reports_each_size():
    net = Net()
    x, y = net.data("x", [2, 3]), net.data("y", [4, 3])
    a = array(net, x)
    write(net, x, net.constant(0), a)
    write(net, y, net.constant(1), a)
    joined = to_tensor(net, a, axis=0)
    out, sizes = gradc.Executor().run(net.program, {"x": X0, "y": np.ones((4, 3))},
                                      [joined, net.block.ops[-1].output("OutIndex")[0]], gradc.Scope())
    assert out.shape == (6, 3) and sizes.tolist() == [2, 4]


def test_joining_an_array_with_a_hole_or_an_axis_out_of_range_is_an_error():
    net, a = arrays_net()
    joined = to_tensor(net, a, use_stack=True)
    with pytest.raises(ExecutionError, match=r"block 0, op 6 \(tensor_array_to_tensor\): array X \(array_\d+\) "
                                             r"has 4 slot\(s\); slot\(s\) \[2\] were never written"):
        run(net, [joined])
    net, a = arrays_net()
    with pytest.raises(ProgramError, match=r"tensor_array_to_tensor\): axis 3 is out of range for stacking"):
        to_tensor(net, a, axis=3, use_stack=True)


def _loss_of(net, value):
    loss = net.mean(value)
    train = net.program.clone()
    gradc.append_backward(train, loss)
    return train


def test_a_slot_read_twice_gets_both_grads_and_unwritten_grad_slots_are_zero():
    """loss = mean(A[1] + A[1] * 3): x1 gets 4 / 6 per element (Paddle's overwrite would give 3 / 6),
    x0, whose slot no grad reaches, gets zeros."""
    net = Net()
    x0, x1 = net.data("x0", [2, 3]), net.data("x1", [2, 3])
    a = array(net, x0)
    write(net, x0, net.constant(0), a)
    one = net.constant(1)
    write(net, x1, one, a)
    value = net.elementwise_add(read(net, a, one), net.scale(read(net, a, one), scale=3.0))
    train = _loss_of(net, value)
    g0, g1 = gradc.Executor().run(train, {"x0": X0, "x1": X1}, ["x0@GRAD", "x1@GRAD"], gradc.Scope())
    np.testing.assert_allclose(g1, np.full((2, 3), 4 / 6))
    np.testing.assert_array_equal(g0, np.zeros((2, 3)))


def test_an_assigned_array_is_a_copy_and_passes_its_grad():
    net = Net()
    x0, x1 = net.data("x0", [2, 3]), net.data("x1", [2, 3])
    a = array(net, x0)
    write(net, x0, net.constant(0), a)
    copy = array(net, x0)
    net.assign(a, copy)
    write(net, x1, net.constant(1), copy)   # the copy grows; A keeps one slot
    length = net.op("lod_array_length", {"X": a})
    value = to_tensor(net, copy, use_stack=True)
    train = _loss_of(net, net.elementwise_mul(value, value))
    n, g0 = gradc.Executor().run(train, {"x0": X0, "x1": X1}, [length, "x0@GRAD"], gradc.Scope())
    assert n.tolist() == [1]
    np.testing.assert_allclose(g0, 2 * X0 / 12)


def test_a_while_loop_creates_the_array_its_body_writes_first():
    """outputs[i] = x * i for i < 3, the array first written inside the loop (as nn.RNN's outputs)."""
    net = Net()
    x = net.data("x", [2, 3])
    i, n = net.constant(0), net.constant(3)
    outputs = array(net, x)

    def body(i):
        scaled = net.elementwise_mul(x, net.cast(i, in_dtype=int(VarType.INT64), out_dtype=int(VarType.FP64)))
        write(net, scaled, i, outputs)
        return [net.increment(i)]

    net.while_loop(lambda i: net.less_than(i, n), body, [i])
    assert outputs in net.block.ops[-1].output("Out") and outputs not in net.block.ops[-1].input("X")
    value = to_tensor(net, outputs, use_stack=True)
    out = gradc.Executor().run(net.program, {"x": X0}, [value], gradc.Scope())[0]
    np.testing.assert_array_equal(out, np.stack([X0 * k for k in range(3)]))


def test_shape_inference_declares_arrays_like_their_elements():
    net, a = arrays_net()
    VerifyPass()(net.program)
    assert net.shape(read(net, a, net.constant(0))) == [2, 3]
    joined = to_tensor(net, a, axis=1, use_stack=True)
    assert net.shape(joined) == [2, -1, 3]


def test_a_declared_array_read_before_any_write_is_empty():
    """A PIR program's pd_op.create_array is a declared array var (legacy programs let write_to_array fill it), and
    Paddle's scope holds it empty from the start: PaddleSpeech's MDTC reads its length in a branch before writing it."""
    net = Net()
    a = net.tmp(None, prefix="array")
    net.block.var(a).type = VarType.DENSE_TENSOR_ARRAY
    length = net.op("lod_array_length", {"X": a})
    (value,) = gradc.Executor().run(net.program, {}, [length], gradc.Scope())
    assert value.tolist() == [0]


def test_an_array_whose_length_is_read_before_its_first_write_exports_to_pir():
    """dy2static appends to a list it built as write_to_array(x, lod_array_length(A)): the first length reads the
    array before any write (Tacotron2's, MDTC's lists), which PIR export refused; it writes a pd_op.create_array."""
    from gradc.pir import parse_pir, serialize_pir
    net = Net()
    x = net.data("x0", [2, 3])
    a = array(net, x)
    write(net, x, net.op("lod_array_length", {"X": a}), a)
    out = read(net, a, net.constant(0))
    program = parse_pir(serialize_pir(net.program, fetch=[out]))
    assert [op.type for op in program.global_block.ops][:2] == ["lod_array_length", "write_to_array"]
    (value,) = gradc.Executor().run(program, {"x0": X0}, [out], gradc.Scope())
    np.testing.assert_array_equal(value, X0)


def _loop_reading_an_array():
    """total = sum of tanh(A[i]) over i < 2, A = [x0, x1, (unwritten), x3]."""
    net, a = arrays_net()
    i, n, total = net.constant(0), net.constant(2), net.data("total", [2, 3])

    def body(i, total):
        added = net.elementwise_add(total, net.tanh(read(net, a, i)))
        return [net.increment(i), added]

    net.while_loop(lambda i, total: net.less_than(i, n), body, [i, total])
    return _loss_of(net, total)


LOOP_FEED = {"x0": X0, "x1": X1, "x3": X3, "total": np.zeros((2, 3))}


def test_a_loop_reading_an_array_each_iteration_adds_its_grads_position_by_position():
    """A loop that reads A[i] in iteration i (MDTC sums the blocks' outputs it listed so) gets one grad array per
    iteration, added up: they were joined as lists ([g0] + [None, g1]), and the array's grad had 3 positions."""
    grads = gradc.Executor().run(_loop_reading_an_array(), LOOP_FEED, ["x0@GRAD", "x1@GRAD", "x3@GRAD"],
                                 gradc.Scope())
    for grad, x in zip(grads[:2], (X0, X1)):
        np.testing.assert_allclose(grad, (1 - np.tanh(x) ** 2) / 6)
    np.testing.assert_array_equal(grads[2], 0)


def test_a_loops_grads_of_an_array_add_up_in_pir_as_add_n_array():
    """PIR export adds the iterations' grad arrays with pd_op.add_n_array, as Paddle adds arrays (its pd_op.add takes
    dense tensors only), and the program read back gives the same grads."""
    from gradc.pir import parse_pir, serialize_pir
    train = _loop_reading_an_array()
    names = ["x0@GRAD", "x1@GRAD"]
    written = serialize_pir(train, fetch=names)
    assert b'"1.add_n_array"' in written
    again = gradc.Executor().run(parse_pir(written), LOOP_FEED, names, gradc.Scope())
    for grad, expected in zip(again, gradc.Executor().run(train, LOOP_FEED, names, gradc.Scope())):
        np.testing.assert_allclose(grad, expected)


def test_a_copy_of_an_array_exports_as_assign_array():
    """Legacy assign copies a tensor array too (gradc's backward of a branch that writes one: MDTC); Paddle 3.3.1 copies
    an array with pd_op.assign_array, and its pd_op.assign of one fails (`Unsupported sharing meta for TensorArray`)."""
    from gradc.pir import parse_pir, serialize_pir
    net, a = arrays_net()
    copy = net.tmp(None, prefix="copy")
    net.block.var(copy).type = VarType.DENSE_TENSOR_ARRAY
    net.block.append_op("assign", {"X": [a]}, {"Out": [copy]})
    out = read(net, copy, net.constant(1))
    written = serialize_pir(net.program, fetch=[out])
    assert b'"1.assign_array"' in written and b'"1.assign"' not in written
    program = parse_pir(written)
    assert "assign" in [op.type for op in program.global_block.ops]
    (value,) = gradc.Executor().run(program, {"x0": X0, "x1": X1, "x3": X3}, [out], gradc.Scope())
    np.testing.assert_array_equal(value, X1)


def test_a_branch_that_binds_an_array_to_a_copy_yields_it_from_the_pir_if():
    """A branch may bind an array to a new one (assign: gradc's form of an if that yields an array, as PaddleSpeech's
    MDTC has); PIR writes arrays in place, but a copy (assign_array) is a new value, which must leave the if as its
    result, else the ops after it read the array as it was before (Paddle ran MDTC's loop over an empty array)."""
    from gradc.pir import parse_pir, serialize_pir
    net, a = arrays_net()
    other = array(net, net.data("y", [2, 3]))
    write(net, "y", net.constant(0), other)
    with net.sub_block() as body:
        net.assign(other, a)
    op = net.block.append_op("conditional_block", {"Cond": [net.constant(True, dtype=VarType.BOOL)], "Input": [other]},
                             {"Out": [a], "Scope": [net.scopes()]}, {"is_scalar_condition": True})
    op.set_attr("sub_block", body.idx, AttrType.BLOCK)
    out = read(net, a, net.constant(0))
    feed = {"x0": X0, "x1": X1, "x3": X3, "y": X3 * 2}
    (direct,) = gradc.Executor().run(net.program, feed, [out], gradc.Scope())
    (exported,) = gradc.Executor().run(parse_pir(serialize_pir(net.program, fetch=[out])), feed, [out], gradc.Scope())
    np.testing.assert_array_equal(direct, X3 * 2)
    np.testing.assert_array_equal(exported, X3 * 2)


def test_zeros_like_an_array_export_as_create_array_like():
    """gradc's backward fills the grad of an array nobody's grad writes with fill_any_like of 0 (a loop's array in
    Tacotron2 with its prenet's dropout); Paddle's full_like refuses an array (`dims() can't be used in TensorArray`):
    PIR export writes pd_op.create_array_like of 0, which reads back as zeros of each element."""
    from gradc.pir import parse_pir, serialize_pir
    net = Net()
    a = array(net, net.data("x0", [2, 3]))
    for k, x in enumerate(("x0", net.data("x1", [2, 3]))):
        write(net, x, net.constant(k), a)
    zeros = net.tmp(None, prefix="zeros")
    net.block.var(zeros).type = VarType.DENSE_TENSOR_ARRAY
    net.block.append_op("fill_any_like", {"X": [a]}, {"Out": [zeros]}, {"value": 0.0, "dtype": -1})
    out = read(net, zeros, net.constant(1))
    written = serialize_pir(net.program, fetch=[out])
    assert b'"1.create_array_like"' in written and b'"1.full_like"' not in written
    (value,) = gradc.Executor().run(parse_pir(written), {"x0": X0, "x1": X1}, [out], gradc.Scope())
    np.testing.assert_array_equal(value, np.zeros((2, 3)))
