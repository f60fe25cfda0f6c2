"""LoD tensors (gradc.executor.lod) and the sequence ops over them: the feed and fetch API, offsets checked, LoD
carried through ordinary ops and their grads, no LoD work for programs without it, and values pinned against
Paddle 3.3.1 (empty sequences, MaxIndex, sequence_expand, lod_reset's LoD sources)."""

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from gradc import ExecutionError, LoDTensor
from gradc.executor.lod import grad_of, with_lods
from gradc.layers import ProgramBuilder
from gradc.limits import limited
from programs import Net

# Paddle 3.3.1's sequence_pool of these rows (sequences of 2, 0, 3 and 1 rows) with pad_value 7
ROWS = np.array([[-2, -1], [0, 1], [2, -2], [-1, 0], [1, 2], [-2, -1]], np.float32)
PADDLE_POOLED = {
    "AVERAGE": [[-1, 0], [7, 7], [2 / 3, 0], [-2, -1]],
    "SUM": [[-2, 0], [7, 7], [2, 0], [-2, -1]],
    "SQRT": [[-2 / np.sqrt(2), 0], [7, 7], [2 / np.sqrt(3), 0], [-2, -1]],
    "MAX": [[0, 1], [7, 7], [2, 2], [-2, -1]],
    "LAST": [[0, 1], [7, 7], [1, 2], [-2, -1]],
    "FIRST": [[-2, -1], [7, 7], [2, -2], [-2, -1]],
}


def program_of(op_type, inputs: dict, attrs=None, outputs=None):
    """(program, the op's output names, feed): one op over data vars named after their slots."""
    net = ProgramBuilder()
    feed, slots = {}, {}
    for slot, value in inputs.items():
        array = value.array if isinstance(value, LoDTensor) else value
        slots[slot] = net.data(slot.lower(), [-1, *array.shape[1:]], array.dtype.name)
        feed[slots[slot]] = value
    names = net.op(op_type, slots, attrs, outputs=outputs)
    return net.program, names, feed


def run(op_type, inputs: dict, attrs=None, outputs=None, return_lod=True):
    program, names, feed = program_of(op_type, inputs, attrs, outputs)
    return gradc.Executor().run(program, feed, names, gradc.Scope(), return_lod=return_lod)


def test_lengths_give_offsets():
    tensor = LoDTensor.from_lengths(np.zeros((5, 1)), [[2, 0, 3]])
    assert tensor.lod == ((0, 2, 2, 5),)
    assert tensor.lengths == [[2, 0, 3]]


@pytest.mark.parametrize("lod, phrase", [
    ([[1, 2, 5]], "must start at offset 0"),
    ([[0, 3, 2, 5]], "has decreasing offsets"),
    ([[0, 2, 4]], "ends at 4, not at dim 0 (5)"),
    ([[0, 1, 3], [0, 2, 5]], "ends at 3, not at the 2 sequences of level 1"),
])
def test_bad_offsets_are_refused_at_the_feed(lod, phrase):
    with pytest.raises(ExecutionError, match=rf"feed var 'x': .*{phrase}".replace("(", r"\(").replace(")", r"\)")):
        run("sequence_pool", {"X": LoDTensor(np.zeros((5, 2), np.float32), lod)})


@pytest.mark.parametrize("pooltype", sorted(PADDLE_POOLED))
def test_pooling_with_an_empty_sequence_matches_paddle(pooltype):
    out, index = run("sequence_pool", {"X": LoDTensor.from_lengths(ROWS, [[2, 0, 3, 1]])},
                     {"pooltype": pooltype, "pad_value": 7.0}, outputs=["Out", "MaxIndex"])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, PADDLE_POOLED[pooltype], rtol=1e-6)
    if pooltype == "MAX":   # Paddle's MaxIndex: absolute rows of the first maximum, -1 for the empty sequence
        np.testing.assert_array_equal(index, [[1, 1], [-1, -1], [2, 4], [5, 5]])


def test_pooling_keeps_the_levels_above_the_last():
    x = LoDTensor.from_lengths(np.arange(5, dtype=np.float32).reshape(5, 1), [[1, 2], [2, 0, 3]])
    (out,) = run("sequence_pool", {"X": x}, {"pooltype": "SUM"})
    assert out.lod == ((0, 1, 3),)
    np.testing.assert_array_equal(out.array.ravel(), [1, 0, 9])   # Paddle's values


def test_softmax_per_sequence_matches_paddle_and_does_not_overflow():
    x = LoDTensor.from_lengths(np.arange(5, dtype=np.float32).reshape(5, 1), [[1, 2], [2, 0, 3]])
    (out,) = run("sequence_softmax", {"X": x}, return_lod=False)
    np.testing.assert_allclose(out.ravel(), [0.26894143, 0.7310586, 0.09003058, 0.24472849, 0.665241], rtol=1e-6)
    (big,) = run("sequence_softmax", {"X": LoDTensor([[1000.0], [1001.0]], [[0, 2]])}, return_lod=False)
    np.testing.assert_allclose(big.ravel(), [0.26894142, 0.73105858])   # Paddle: exp overflows to NaN


def test_expand_without_and_with_a_lod_on_x_matches_paddle():
    y = LoDTensor.from_lengths(np.zeros((5, 1), np.float32), [[2, 0, 3]])
    (out,) = run("sequence_expand", {"X": np.arange(6, dtype=np.float32).reshape(3, 2), "Y": y})
    assert isinstance(out, np.ndarray)   # no LoD on X: none on Out
    np.testing.assert_array_equal(out, [[0, 1], [0, 1], [4, 5], [4, 5], [4, 5]])
    x = LoDTensor.from_lengths(np.arange(3, dtype=np.float32).reshape(3, 1), [[1, 0, 2]])
    (out,) = run("sequence_expand", {"X": x, "Y": y})
    assert out.lod == ((0, 1, 2, 4, 6, 8),)
    np.testing.assert_array_equal(out.array.ravel(), [0, 0, 1, 2, 1, 2, 1, 2])


@pytest.mark.parametrize("inputs, attrs, lod", [
    ({}, {"target_lod": [0, 1, 4]}, ((0, 1, 4),)),
    ({"Y": np.array([0, 3, 4], np.int32)}, {}, ((0, 3, 4),)),
    ({"Y": LoDTensor.from_lengths(np.zeros((4, 1), np.float32), [[2, 2]])}, {"target_lod": [0, 4]}, ((0, 2, 4),)),
])
def test_lod_reset_takes_y_lod_then_y_values_then_the_attribute(inputs, attrs, lod):
    (out,) = run("lod_reset", {"X": np.arange(4, dtype=np.float32).reshape(4, 1), **inputs}, attrs)
    assert out.lod == lod
    np.testing.assert_array_equal(out.array.ravel(), [0, 1, 2, 3])


def test_lod_reset_append_adds_a_level_below():
    x = LoDTensor.from_lengths(np.zeros((4, 1), np.float32), [[4]])
    (out,) = run("lod_reset", {"X": x}, {"target_lod": [0, 1, 4], "append": True})
    assert out.lod == ((0, 4), (0, 1, 4))


def test_im2sequence_gives_one_sequence_per_image():
    x = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)
    (out,) = run("im2sequence", {"X": x}, {"kernels": [2, 2]})
    assert out.lod == ((0, 4, 8),)
    np.testing.assert_array_equal(out.array[:2], [[0, 1, 3, 4], [1, 2, 4, 5]])


def lod_through_ops():
    """x (LoD) -> relu -> scale -> sequence_pool SUM -> mean, differentiated."""
    net = ProgramBuilder()
    x = net.data("x", [-1, 2], "float32")
    hidden = net.op("scale", {"X": net.op("relu", {"X": x})[0]}, {"scale": 2.0})[0]
    pooled = net.op("sequence_pool", {"X": hidden}, {"pooltype": "SUM"})[0]
    loss = net.mean(pooled)
    net.block.var(x).stop_gradient = False
    gradc.append_backward(net.program, loss)
    return net.program, x, pooled


def test_ordinary_ops_and_grads_pass_the_lod_on():
    program, x, pooled = lod_through_ops()
    feed = {x: LoDTensor.from_lengths(np.ones((5, 2), np.float32), [[2, 3]])}
    out, grad = gradc.Executor().run(program, feed, [pooled, f"{x}@GRAD"], gradc.Scope(), return_lod=True)
    np.testing.assert_array_equal(out, [[4, 4], [6, 6]])   # relu and scale kept x's LoD for the pooling
    assert grad.lod == ((0, 2, 5),)   # X@GRAD has X's LoD
    np.testing.assert_allclose(grad.array, np.full((5, 2), 0.5))


def test_a_program_without_lod_runs_the_plain_plan():
    net = ProgramBuilder()
    x = net.data("x", [2, 3], "float32")
    out = net.op("relu", {"X": x})[0]
    executor = gradc.Executor()
    executor.run(net.program, {x: np.ones((2, 3), np.float32)}, [out], gradc.Scope())
    plan = next(iter(executor.plans(net.program.global_block).values()))
    assert not plan.makes_lod and plan._lod_rows is None   # no LoD rows built, none used


def test_a_sequence_op_without_a_lod_says_so():
    with pytest.raises(ExecutionError, match=r"op 0 \(sequence_conv\).*X has no LoD"):
        run("sequence_conv", {"X": np.zeros((3, 2), np.float32), "Filter": np.zeros((6, 1), np.float32)},
            {"contextLength": 3})


def test_the_cli_feeds_and_writes_a_lod_beside_each_array(tmp_path):
    program, (out,), _ = program_of("sequence_expand", {"X": LoDTensor([[1.0], [2.0]], [[0, 1, 2]]),
                                                        "Y": LoDTensor(np.zeros((3, 1)), [[0, 1, 3]])})
    gradc.save(program, tmp_path / "p.pb")
    np.savez(tmp_path / "feed.npz", x=np.array([[1.0], [2.0]]), y=np.zeros((3, 1)),
             **{"x@LOD0": np.array([0, 1, 2]), "y@LOD0": np.array([0, 1, 3])})
    done = gradc_cli("run", tmp_path / "p.pb", "--feed", tmp_path / "feed.npz", "--fetch", out,
                     "--out", tmp_path / "out.npz")
    assert done.returncode == 0, done.stderr
    written = np.load(tmp_path / "out.npz")
    np.testing.assert_array_equal(written[out].ravel(), [1, 2, 2])
    np.testing.assert_array_equal(written[f"{out}@LOD0"], [0, 1, 2, 3])   # X's sequence 1 twice
    np.savez(tmp_path / "gap.npz", x=np.zeros((2, 1)), y=np.zeros((3, 1)),
             **{"x@LOD1": np.array([0, 2]), "y@LOD0": np.array([0, 3])})
    done = gradc_cli("run", tmp_path / "p.pb", "--feed", tmp_path / "gap.npz", "--fetch", out)
    assert done.returncode == 1 and "the LoD of 'x' has levels [1]: name them x@LOD0" in done.stderr


def test_declared_lod_levels_follow_paddles_compile_time_rules():
    net = ProgramBuilder()
    x = net.data("x", [-1, 2], "float32", lod_level=1)
    hidden = net.op("relu", {"X": x})[0]
    conv = net.op("sequence_conv", {"X": hidden, "Filter": net.parameter("w", [6, 3])}, {"contextLength": 3})[0]
    pooled = net.op("sequence_pool", {"X": conv}, {"pooltype": "MAX"})[0]
    reset = net.op("lod_reset", {"X": pooled}, {"target_lod": [0, 1]})[0]
    levels = {name: net.block.var(name).lod_level for name in (hidden, conv, pooled, reset)}
    assert levels == {hidden: 1, conv: 1, pooled: None, reset: 1}   # as Paddle's programs declare them


def test_im2sequence_real_sizes_match_paddle():
    """Real sizes [5, 3] and [4, 4] over out_stride [2, 1] (rounded up): 2 x 2 and 1 x 3 patches."""
    x = np.arange(32, dtype=np.float32).reshape(2, 1, 4, 4)
    (out,) = run("im2sequence", {"X": x, "Y": np.array([[5, 3], [4, 4]], np.float32)},
                 {"kernels": [2, 2], "out_stride": [2, 1]})
    assert out.lod == ((0, 4, 7),)
    np.testing.assert_array_equal(out.array, [[0, 1, 4, 5], [1, 2, 5, 6], [4, 5, 8, 9], [5, 6, 9, 10],
                                              [16, 17, 20, 21], [17, 18, 21, 22], [18, 19, 22, 23]])   # Paddle's


def test_a_saved_inference_programs_feed_op_keeps_the_fed_lod():
    program, (out,), feed = program_of("sequence_pool", {"X": LoDTensor.from_lengths(ROWS, [[2, 0, 3, 1]])},
                                       {"pooltype": "SUM"})
    block = program.global_block
    block.create_var("feed", type=gradc.VarType.FEED_MINIBATCH, dtype=None, persistable=True)
    block.ops.insert(0, gradc.OpDesc("feed", {"X": ["feed"]}, {"Out": ["x"]}, {"col": 0}))
    program.mark_changed()
    (pooled,) = gradc.Executor().run(program, feed, [out], gradc.Scope())
    np.testing.assert_allclose(pooled[[0, 2]], [[-2, 0], [2, 0]])
    block.create_var("fetch", type=gradc.VarType.FETCH_LIST, dtype=None, persistable=True)
    block.append_op("fetch", {"X": ["x"]}, {"Out": ["fetch"]}, {"col": 0})   # its fetch ops: the LoD comes back too
    (fetched,) = gradc.Executor().run(program, feed, None, gradc.Scope(), return_lod=True)
    assert fetched.lod == ((0, 2, 2, 5, 6),)


@pytest.mark.parametrize("lod", [[[0, 1.5, 3]], [[[0, 1], [1, 3]]], [[0, np.nan, 3]], [[False, True]]])
def test_offsets_that_are_not_a_flat_list_of_integers_are_refused(lod):
    with pytest.raises(ExecutionError, match=r"level 0 of the LoD must be a flat list of integer offsets"):
        LoDTensor(np.zeros((3, 1)), lod)


def test_npz_offsets_that_are_not_integers_name_their_array():
    with pytest.raises(ExecutionError, match=r"'x@LOD0' must be a flat list of integer offsets, got float64\[3\]"):
        with_lods({"x": np.zeros((3, 1)), "x@LOD0": np.array([0, np.nan, 3])})


def test_a_huge_context_length_is_bounded_by_the_filter():
    x = LoDTensor(np.zeros((4, 2), np.float32), [[0, 2, 4]])
    with pytest.raises(ExecutionError, match="Filter has 4 rows, not contextLength 1099511627776 times X's width 2"):
        run("sequence_conv", {"X": x, "Filter": np.zeros((4, 1), np.float32)}, {"contextLength": 2**40})
    empty = LoDTensor(np.zeros((4, 0), np.float32), [[0, 2, 4]])   # no width: the filter bounds nothing
    (out,) = run("sequence_conv", {"X": empty, "Filter": np.zeros((0, 3), np.float32)}, {"contextLength": 2**40})
    np.testing.assert_array_equal(out.array, np.zeros((4, 3)))


def test_an_expansion_past_the_memory_limit_is_refused_before_it_is_made():
    x = LoDTensor(np.zeros((1000, 2), np.float32), [[0, 1000]])
    y = LoDTensor(np.zeros((1000, 1), np.float32), [[0, 1000], list(range(1001))])   # x's sequence 1000 times
    with limited(max_bytes=1 << 20), pytest.raises(ExecutionError, match=r"Out of shape \[1000000, 2\] would need"):
        run("sequence_expand", {"X": x, "Y": y}, {"ref_level": 0})


def test_im2sequence_of_no_images_is_empty():
    (out,) = run("im2sequence", {"X": np.zeros((0, 2, 3, 3), np.float32)}, {"kernels": [2, 2]})
    assert out.array.shape == (0, 8) and out.lod == ((0,),)


@pytest.mark.parametrize("fed, x_lod", [(True, True), (False, True), (False, False)])
def test_a_lod_made_in_a_sub_block_reaches_the_block_that_runs_it(fed, x_lod):
    """A branch resets x's LoD into out (an outer var: fed, or first written by the branch); the parent block,
    which declares no LoD itself, passes it through relu to sequence_pool (Paddle: [0, 10], not x's [1, 9])."""
    net = Net()
    cond, x, out = net.data("c", [1]), net.data("x", [-1, 1]), net.data("out", [-1, 1])
    with net.sub_block() as body:
        net.assign(net.op("lod_reset", {"X": x}, {"target_lod": [0, 1, 5]}), out)
    op = net.block.append_op("conditional_block", {"Cond": [cond], "Input": [x]},
                             {"Out": [out], "Scope": [net.scopes()]}, {"is_scalar_condition": True})
    op.set_attr("sub_block", body.idx, gradc.ir.AttrType.BLOCK)
    pooled = net.op("sequence_pool", {"X": net.relu(out)}, {"pooltype": "SUM"})
    rows = np.arange(5.0).reshape(5, 1)
    feed = {"c": np.ones(1, bool), "x": LoDTensor(rows, [[0, 2, 5]]) if x_lod else rows}
    got_out, got_pooled = gradc.Executor().run(net.program, {**feed, **({"out": np.zeros((5, 1))} if fed else {})},
                                               [out, pooled], gradc.Scope(), return_lod=True)
    assert got_out.lod == ((0, 1, 5),)
    np.testing.assert_array_equal(got_pooled.ravel(), [0, 10])


def test_a_pylayer_passes_the_lod_its_forward_block_gives_and_its_grad_gets_the_inputs():
    net = Net()
    x = net.data("x", [-1, 1])
    (out,) = net.pylayer(lambda a: net.op("lod_reset", {"X": a}, {"target_lod": [0, 1, 5]}), [x],
                         backward_fn=lambda g: net.scale(g, scale=2.0))
    pooled = net.op("sequence_pool", {"X": out}, {"pooltype": "SUM"})
    net.block.var(x).stop_gradient = False
    gradc.append_backward(net.program, net.mean(pooled))
    got, grad = gradc.Executor().run(net.program, {"x": LoDTensor(np.arange(5.0).reshape(5, 1), [[0, 2, 5]])},
                                     [pooled, "x@GRAD"], gradc.Scope(), return_lod=True)
    np.testing.assert_array_equal(got.ravel(), [0, 10])   # the block's LoD, not x's ([1, 9])
    assert grad.lod == ((0, 2, 5),)


def test_no_lod_outlives_its_run_in_the_callers_scope():
    """A persistable var lives in the caller's scope; the LoD an op gives it stays in the run (else every later
    run would take the LoD path and read a stale LoD)."""
    net = ProgramBuilder()
    x = net.data("x", [-1, 1], "float32")
    kept = net.block.create_var("kept", [-1, 1], gradc.VarType.FP32, persistable=True).name
    net.block.append_op("assign", {"X": [x]}, {"Out": [kept]})
    scope = gradc.Scope()
    scope[kept] = np.zeros((3, 1), np.float32)
    (got,) = gradc.Executor().run(net.program, {x: LoDTensor(np.ones((3, 1), np.float32), [[0, 1, 3]])}, [kept],
                                  scope, return_lod=True)
    assert got.lod == ((0, 1, 3),) and scope.lods is None


def test_lod_reset_grad_refuses_a_grad_of_another_shape():
    net = ProgramBuilder()
    x, dout = net.data("x", [4, 2], "float32"), net.data("dout", [3, 2], "float32")
    dx = net.block.create_var("dx", [4, 2], gradc.VarType.FP32).name
    net.block.append_op("lod_reset_grad", {"X": [x], "Out@GRAD": [dout]}, {"X@GRAD": [dx]})
    with pytest.raises(ExecutionError, match=r"\(lod_reset_grad\): Out@GRAD \[3, 2\] must have X's shape \[4, 2\]"):
        gradc.Executor().run(net.program, {x: np.zeros((4, 2), np.float32), dout: np.zeros((3, 2), np.float32)},
                             [dx], gradc.Scope())


@pytest.mark.parametrize("rows, at", [([1.0, np.nan, 3.0], 1), ([np.nan, 1.0, 3.0], 0)])
def test_max_pooling_over_a_nan_is_nan_whatever_its_place(rows, at):
    """Paddle gives 3 for the first (it skips a NaN after the first row), NaN for the second: gradc NaN for both."""
    out, index = run("sequence_pool", {"X": LoDTensor(np.array(rows, np.float32).reshape(3, 1), [[0, 3]])},
                     {"pooltype": "MAX"}, outputs=["Out", "MaxIndex"], return_lod=False)
    assert np.isnan(out).all() and index.tolist() == [[at]]


def test_a_grad_makers_temporary_of_other_rows_takes_no_lod():
    """sequence_softmax's second derivative pools per sequence: the grad of the pooled temporary (one row per
    sequence, named ...@GRAD@TMP@...) must not take the LoD of the rows it was named after."""
    net = ProgramBuilder()
    x = net.data("x", [-1, 1], "float32", lod_level=1)
    net.block.var(x).stop_gradient = False
    out = net.op("sequence_softmax", {"X": x})[0]
    (grad,) = gradc.gradients(net.program, net.mean(net.op("elementwise_mul", {"X": out, "Y": out})[0]), [x])
    (second,) = gradc.gradients(net.program, net.mean(net.op("elementwise_mul", {"X": grad, "Y": grad})[0]), [x])
    pooled_grad = next(op for op in net.block.ops if op.type == "sequence_expand_grad").output("X@GRAD")[0]
    feed = {x: LoDTensor(np.linspace(0, 1, 5, dtype=np.float32).reshape(5, 1), [[0, 2, 5]])}
    per_sequence, got = gradc.Executor().run(net.program, feed, [pooled_grad, second], gradc.Scope(), return_lod=True)
    assert isinstance(per_sequence, np.ndarray) and per_sequence.shape == (2, 1)
    assert got.lod == ((0, 2, 5),)


@pytest.mark.parametrize("name, var", [("x@GRAD", "x"), ("x@GRAD@RENAME@block0@1", "x"), ("x@GRAD@2", "x"),
                                       ("x@GRAD@GRAD", "x@GRAD"), ("x@GRAD@TMP@0@3", None),
                                       ("x@GRAD@TMP@0@2@GRAD@TMP@0@10", None), ("x", None)])
def test_the_var_a_grad_belongs_to(name, var):
    assert grad_of(name) == var
