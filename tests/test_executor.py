"""The executor: scopes, feed/fetch, freeing temporaries, startup programs, clear errors."""

import gc
import weakref

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.executor import KERNELS
from gradc.layers import ProgramBuilder


def small_net():
    net = ProgramBuilder(seed=7)
    x = net.data("x", [-1, 4])
    hidden = net.fc(x, 3, act="tanh")
    return net, net.mean(hidden)


def test_scope_is_dict_like_with_parents():
    outer = gradc.Scope()
    outer["w"] = 1
    inner = outer.child()
    inner["t"] = 2
    assert "w" in inner and inner["w"] == 1 and "t" not in outer
    inner.assign("w", 3)  # an existing outer var is updated where it lives
    assert outer["w"] == 3 and "w" not in inner.vars
    with pytest.raises(KeyError):
        outer["t"]


def test_parameters_persist_in_the_scope_and_temporaries_do_not():
    net, loss = small_net()
    scope = gradc.Scope()
    executor = gradc.Executor()
    executor.run(net.startup, scope=scope)
    assert sorted(scope.keys()) == ["fc_0.b_0", "fc_0.w_0"]
    executor.run(net.program, {"x": np.ones((2, 4), "float32")}, [loss], scope)
    assert sorted(scope.keys()) == ["fc_0.b_0", "fc_0.w_0"]


def test_seeded_initialisers_are_reproducible():
    net, _ = small_net()
    first, second = gradc.Scope(), gradc.Scope()
    gradc.Executor().run(net.startup, scope=first)
    gradc.Executor().run(net.startup, scope=second)
    np.testing.assert_array_equal(first["fc_0.w_0"], second["fc_0.w_0"])
    assert first["fc_0.w_0"].dtype == np.float32 and np.abs(first["fc_0.w_0"]).max() <= 0.1


def test_temporaries_are_freed_after_their_last_reader():
    """A probe op placed late sees only what later ops still need (plus fetched/persistable vars)."""
    net = ProgramBuilder()
    x = net.data("x", [3])
    a = net.op("tanh", {"X": x})[0]
    b = net.op("relu", {"X": a})[0]      # last reader of a
    c = net.op("sigmoid", {"X": b})[0]   # last reader of b
    net.block.append_op("test_probe", {"X": [c]}, {})
    seen = {}
    KERNELS["test_probe"] = lambda k: seen.update(names=set(k.scope.vars)) or {}
    try:
        gradc.Executor().run(net.program, {"x": np.ones(3, "float32")}, [c], gradc.Scope())
    finally:
        KERNELS.pop("test_probe")
    assert seen["names"] == {c}


def test_dtypes_follow_the_program():
    """As in Paddle: an array fed to a data var must have its dtype; lists are converted; other vars cast."""
    net, loss = small_net()
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    with pytest.raises(gradc.ExecutionError, match=r"feed var 'x', read first by block 0, op 0 \(mul\), "
                                                       r"is float64, but block 0 declares float32"):
        gradc.Executor().run(net.program, {"x": np.ones((2, 4))}, [loss], scope)
    (value,) = gradc.Executor().run(net.program, {"x": [[1.0] * 4] * 2}, [loss], scope)
    assert value.dtype == np.float32
    net.block.var("x").need_check_feed = None
    (value,) = gradc.Executor().run(net.program, {"x": np.ones((2, 4))}, [loss], scope)  # float64 fed
    assert value.dtype == np.float32


def test_feed_shape_mismatch_names_the_var():
    net, loss = small_net()
    with pytest.raises(gradc.ExecutionError, match=r"feed var 'x', read first by block 0, op 0 \(mul\), "
                                                       r"has shape \[2, 5\].*\[-1, 4\]"):
        gradc.Executor().run(net.program, {"x": np.ones((2, 5), "float32")}, [loss], gradc.Scope())


def test_missing_input_names_op_and_var():
    net, loss = small_net()
    with pytest.raises(gradc.ExecutionError, match=r"block 0, op 0 \(mul\) reads var 'x'"):
        gradc.Executor().run(net.program, {}, [loss], gradc.Scope())


def test_kernel_failure_names_op_and_input_shapes():
    program = gradc.Program()
    block = program.global_block
    for name, shape in (("a", [2, 3]), ("b", [4, 5]), ("c", [2, 5])):
        block.create_var(name, shape)
    block.append_op("matmul_v2", {"X": ["a"], "Y": ["b"]}, {"Out": ["c"]})
    with pytest.raises(gradc.ExecutionError, match=r"block 0, op 0 \(matmul_v2\): contraction dims differ: 3 vs 4 "
                                               r".*X=a\[2, 3\], Y=b\[4, 5\]"):
        gradc.Executor().run(program, {"a": np.ones((2, 3)), "b": np.ones((4, 5))}, ["c"], gradc.Scope())


def test_all_missing_kernels_are_listed():
    program = gradc.Program()
    program.global_block.append_op("no_such_op_a", {}, {})
    program.global_block.append_op("no_such_op_b", {}, {})
    with pytest.raises(gradc.ExecutionError, match=r"no kernel for 2 op\(s\).*no_such_op_a.*no_such_op_b"):
        gradc.Executor().run(program, {}, [], gradc.Scope())


def test_paddle_feed_and_fetch_ops():
    """Saved inference programs read inputs through `feed` ops and write results through `fetch` ops."""
    program = gradc.load(DATA / "mlp" / "forward.pb")
    block = program.global_block
    block.create_var("feed", type=gradc.VarType.FEED_MINIBATCH, dtype=None, persistable=True)
    block.create_var("fetch", type=gradc.VarType.FETCH_LIST, dtype=None, persistable=True)
    block.ops.insert(0, gradc.OpDesc("feed", {"X": ["feed"]}, {"Out": ["x"]}, {"col": 0}))
    block.ops.insert(1, gradc.OpDesc("feed", {"X": ["feed"]}, {"Out": ["label"]}, {"col": 1}))
    block.append_op("fetch", {"X": ["mean_0.tmp_0"]}, {"Out": ["fetch"]}, {"col": 0})
    scope = gradc.Scope()
    with np.load(DATA / "mlp" / "params.npz") as params:
        for name in params.files:
            scope[name] = params[name]
    with np.load(DATA / "mlp" / "feed.npz") as feed:
        (loss,) = gradc.Executor().run(program, dict(feed), scope=scope)
    np.testing.assert_allclose(loss, np.load(DATA / "mlp" / "loss.npy"), rtol=1e-6)


def test_a_plan_is_reused_and_rebuilt_when_the_program_grows():
    net, loss = small_net()
    scope = gradc.Scope()
    executor = gradc.Executor()
    executor.run(net.startup, scope=scope)
    feed = {"x": np.ones((2, 4), "float32")}
    executor.run(net.program, feed, [loss], scope)
    built = executor.plans_built
    executor.run(net.program, feed, [loss], scope)
    assert executor.plans_built == built
    gradc.append_backward(net.program, loss)
    (grad,) = executor.run(net.program, feed, ["fc_0.w_0@GRAD"], scope)
    assert grad.shape == (4, 3)
    assert executor.plans_built == built + 1


def test_a_long_lived_executor_keeps_no_program_it_ran_alive():
    """The plans live on the program's blocks: a program dropped takes them along, the executor keeps nothing."""
    executor = gradc.Executor()
    dropped = []
    for _ in range(3):
        net, loss = small_net()
        scope = gradc.Scope()
        executor.run(net.startup, scope=scope)
        executor.run(net.program, {"x": np.ones((2, 4), "float32")}, [loss], scope)
        dropped.append(weakref.ref(net.program.global_block))
        assert executor.plans(net.program.global_block)
        del net, scope
    gc.collect()
    assert all(ref() is None for ref in dropped)


def test_edits_to_a_program_are_seen_by_the_next_run():
    """A plan is reused only for the very same ops; attributes are read live."""
    program = gradc.Program()
    block = program.global_block
    block.create_var("x", [2])
    block.create_var("y", [2])
    op = block.append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": 2.0})
    executor, feed = gradc.Executor(), {"x": np.ones(2, "float32")}
    assert executor.run(program, feed, ["y"], gradc.Scope())[0].tolist() == [2.0, 2.0]
    op.set_attr("scale", 5.0)
    assert executor.run(program, feed, ["y"], gradc.Scope())[0].tolist() == [5.0, 5.0]
    block.ops[0] = gradc.OpDesc("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": -1.0})
    assert executor.run(program, feed, ["y"], gradc.Scope())[0].tolist() == [-1.0, -1.0]


def test_a_kernel_that_upcasts_float32_is_reported():
    net = ProgramBuilder()
    x = net.data("x", [3])
    y = net.op("tanh", {"X": x})[0]
    correct = KERNELS["tanh"]
    KERNELS["tanh"] = lambda k: {"Out": np.tanh(k.x("X").astype(np.float64))}
    try:
        with pytest.raises(gradc.ExecutionError, match=r"op 0 \(tanh\).*'tanh_0.tmp_0' as float64.*float32"):
            gradc.Executor().run(net.program, {"x": np.ones(3, "float32")}, [y], gradc.Scope())
    finally:
        KERNELS["tanh"] = correct


def test_the_backward_passes_own_ops_handle_tensor_arrays():
    """assign (saved values), sum (accumulated grads) and fill_any_like (zero fill) on array vars."""
    from gradc.executor.tensor_array import TensorArray

    program = gradc.Program()
    block = program.global_block
    for name in ("a", "b", "copy", "total", "zeros"):
        block.create_var(name, None, gradc.VarType.FP32, type=gradc.VarType.DENSE_TENSOR_ARRAY)
    block.append_op("assign", {"X": ["a"]}, {"Out": ["copy"]})
    block.append_op("sum", {"X": ["a", "b"]}, {"Out": ["total"]})
    block.append_op("fill_any_like", {"X": ["a"]}, {"Out": ["zeros"]}, {"value": 0.0, "dtype": -1})
    scope = gradc.Scope()
    scope["a"] = TensorArray([np.ones(2, "float32"), np.full(3, 2.0, "float32")])
    scope["b"] = TensorArray([None, np.ones(3, "float32"), np.ones(1, "float32")])   # a gradient array with a gap
    copy, total, zeros = gradc.Executor().run(program, {}, ["copy", "total", "zeros"], scope)
    assert all(isinstance(v, TensorArray) for v in (copy, total, zeros))
    assert copy[0] is not scope["a"][0] and [t.tolist() for t in copy] == [[1, 1], [2, 2, 2]]
    assert [t.tolist() for t in total] == [[1, 1], [3, 3, 3], [1]]
    assert [t.tolist() for t in zeros] == [[0, 0], [0, 0, 0]] and zeros[1].dtype == np.float32
